import type { AgentDefinition } from "../agents/defineAgent.ts";
import { setting } from "../config/load.ts";
import { maskUrl } from "../config/mask.ts";
import type { ChatModel } from "../contracts/model.ts";
import { isLoopbackUrl, LOCAL_SERVER_API_KEY } from "../llm/config.ts";
import { createChatModel, type LlmConfig, LlmConfigError } from "../llm/index.ts";
import { OpenAIChatModel } from "../llm/openaiModel.ts";
import { loadOpenAI } from "../llm/openaiPackage.ts";

/** The model one agent runs on in a worker: absent in the offline mode. */
export interface AgentModelBinding {
  model: ChatModel | undefined;
  /** The model's name, or "offline", for the agent endpoint's metadata. */
  modelName: string;
}

/** What the worker itself thinks with. */
export interface WorkerModel {
  /** Its LLM server and model; null in the offline mode. */
  config: LlmConfig | null;
  /** The model agents without one of their own get; absent in the offline mode. */
  model?: ChatModel | undefined;
  /** The model's name, or "offline". */
  name: string;
}

/**
 * The models of a worker's agents: an agent naming a model (`defineAgent`'s
 * `model`) gets it, made once per worker per server and model and shared by the
 * agents naming the same; the others get the worker's. A model named alone is
 * on the worker's server; on a worker without one (offline) such an agent runs
 * as the others do. One with its own `baseUrl` gets its model even there. Its
 * key: the variable its `apiKeyEnv` names, else the standard one
 * (CONCLAVE_LLM_API_KEY, else OPENAI_API_KEY, else a placeholder for a server
 * on loopback). A key that cannot be found is a LlmConfigError naming the agent
 * and the variables, when the worker starts.
 */
export class AgentModels {
  readonly #worker: WorkerModel;
  readonly #env: NodeJS.ProcessEnv;
  /** By `<baseURL> <model>`: one ChatModel per server and model. */
  readonly #made = new Map<string, ChatModel>();

  constructor(worker: WorkerModel, env: NodeJS.ProcessEnv = process.env) {
    this.#worker = worker;
    this.#env = env;
    if (worker.config && worker.model) this.#made.set(keyOf(worker.config.baseURL, worker.config.model), worker.model);
  }

  /** The model `agent` runs on (made on the first agent that names it). */
  for(agent: AgentDefinition): AgentModelBinding {
    const spec = agent.model;
    const worker = this.#worker;
    const fallback = { model: worker.model, modelName: worker.name };
    if (!spec) return fallback;
    if (spec.baseUrl === undefined) {
      if (!worker.config) return fallback;
      return this.#bound({ ...worker.config, model: spec.name });
    }
    const error = (message: string) => new LlmConfigError(`agent '${agent.manifest.id}': ${message}`);
    const base = worker.config ?? {
      timeoutMs: setting(this.#env, "CONCLAVE_LLM_TIMEOUT_MS", { error }),
      maxRetries: setting(this.#env, "CONCLAVE_LLM_MAX_RETRIES", { error }),
    };
    return this.#bound({
      baseURL: spec.baseUrl,
      model: spec.name,
      apiKey: this.#apiKey(spec.baseUrl, spec.apiKeyEnv, error),
      timeoutMs: base.timeoutMs,
      maxRetries: base.maxRetries,
    });
  }

  /** Imports `openai` (an optional peer) when a model needs it, so a worker without it fails at start, in one line. */
  async loadPackages(): Promise<void> {
    if ([...this.#made.values()].some((model) => model instanceof OpenAIChatModel)) await loadOpenAI();
  }

  #bound(config: LlmConfig): AgentModelBinding {
    const key = keyOf(config.baseURL, config.model);
    let model = this.#made.get(key);
    if (!model) {
      model = createChatModel(config);
      this.#made.set(key, model);
    }
    return { model, modelName: model.model };
  }

  #apiKey(baseUrl: string, variable: string | undefined, error: (message: string) => Error): string {
    if (variable !== undefined) {
      const key = this.#env[variable]?.trim();
      if (!key) throw error(`its model's apiKeyEnv ${variable} is not set`);
      return key;
    }
    const key = setting(this.#env, "CONCLAVE_LLM_API_KEY", { error });
    if (key !== undefined) return key;
    if (isLoopbackUrl(baseUrl)) return LOCAL_SERVER_API_KEY;
    throw error(
      `its model's server ${JSON.stringify(maskUrl(baseUrl))} is not on this machine and no API key is set: give apiKeyEnv, or set CONCLAVE_LLM_API_KEY or OPENAI_API_KEY`,
    );
  }
}

const keyOf = (baseURL: string, model: string): string => `${baseURL.replace(/\/+$/, "")} ${model}`;
