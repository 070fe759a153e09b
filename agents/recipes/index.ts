// The agents the shipped recipes (recipes/*.yaml) call. Host them with
//   npx conclave worker --agents ./agents/recipes/index.ts

export { judge } from "./content.judge.ts";
export { writer } from "./content.writer.ts";
export { executor } from "./operator.executor.ts";
export { parser } from "./operator.parser.ts";
export { planner as operatorPlanner } from "./operator.planner.ts";
export { reasoner } from "./operator.reasoner.ts";
export { recorder } from "./operator.recorder.ts";
export { retriever } from "./operator.retriever.ts";
export { archiver } from "./ops.archiver.ts";
export { publisher } from "./ops.publisher.ts";
export { papers } from "./research.papers.ts";
export { planner } from "./research.planner.ts";
export { summarizer } from "./research.summarizer.ts";
export { web } from "./research.web.ts";
export { billing } from "./support.billing.ts";
export { general } from "./support.general.ts";
export { technical } from "./support.technical.ts";
export { classifier } from "./triage.classifier.ts";
