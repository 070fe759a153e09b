// The reference filesystem MCP server (npm: @modelcontextprotocol/server-filesystem), started over
// stdio by the worker: it serves the directories named on its command line, and nothing else.
import "@modelcontextprotocol/server-filesystem/dist/index.js";
