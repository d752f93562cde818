// Package sim is a simulated inference server for testing, benchmarking and
// demonstrating synthpipe's generate tool without a GPU.
//
// It speaks two dialects on one listener:
//
//   - SGLang's native API: POST /generate, GET /server_info (and the older
//     /get_server_info), GET /model_info (and /get_model_info), GET /health,
//     GET /health_generate, POST /abort_request.
//   - The OpenAI-compatible chat API with OpenRouter's extensions:
//     POST /v1/chat/completions (also /chat/completions and OpenRouter's
//     /api/v1/chat/completions), GET /v1/models (also /models and
//     /api/v1/models, the price list in OpenRouter's shape), with
//     reasoning, usage.cost, ": OPENROUTER PROCESSING" stream comments and
//     OpenRouter-shaped errors.
//
// Behind both sits one engine that imitates SGLang's scheduler: continuous
// batching inside a KV-cache token budget (Config.MaxTotalTokens), a cap on
// running requests, a FIFO waiting queue, and retraction (preemption) of the
// newest running request when the cache fills up during decode. One decode
// step produces one token for every running request; with a zero latency
// configuration the steps run back to back, so thousands of requests per
// second fit on a laptop.
//
// Outputs are deterministic: output token i of a request is a pure function
// of its prompt and its sampling seed, when it sends one (SGLang's
// sampling_seed, the chat API's seed; see ExpectedOutputIDs for a request
// without), and the answer length is drawn from Config.Lengths with a
// generator seeded by Config.Seed, the prompt and the request's seed. A test
// can therefore verify that every response belongs to its own request.
//
// With Config.AnswerFormat kimi-k2.5 a /generate answer to input_ids is
// written in the bundled Kimi-K2.5 tokenizer's ids as the model writes it:
// reasoning (after a prompt that ends with <think>), </think>, then content
// or a tool-call section calling the declared tools the last user turn
// names (functions.NAME:INDEX), then <|im_end|>; chat answers call the same
// tools under the same ids. Still a function of the prompt and the seed, so
// a conversation regenerated turn by turn goes through tool loops as it
// would with the model.
//
// Faults (HTTP 500, 429 with Retry-After, connection resets, hangs, slow
// first tokens, mid-stream errors, garbage and HTML bodies, SGLang-style
// aborts, OpenRouter 402/403) are injected with configured probabilities,
// deterministically per request, or forced per request with the X-Sim-Fault
// header. See FaultKind.
//
// Chat prompts are not tokenized: their length is estimated as one token per
// started 4 bytes of the role names and message texts. /generate with text
// uses the same estimate; with input_ids the prompt length is exact.
//
// With Config.PrefixCacheTokens the engine keeps a radix-style prefix cache
// of what it has computed (prompts, and prompts with their answers): the
// part of a prompt the cache holds is not prefilled again (the step time
// counts only the rest), is reported as cached_tokens, and the least
// recently used entries are evicted when the cache is full. Chat prompts
// are cut into pseudo-tokens per message for it.
//
// GET /metrics answers the engine counters (Stats) as JSON, or, to a client
// that accepts text/plain (a Prometheus scraper), SGLang's gauges in the
// Prometheus text format: sglang:gen_throughput (tokens per second over the
// latest 40 decode steps), num_running_reqs, num_queue_reqs, token_usage,
// num_used_tokens and cache_hit_rate (the prefix cache's share of the
// latest admitted prompts), the counters prompt_tokens_total,
// cached_tokens_total and generation_tokens_total, one series per
// data-parallel rank (Config.DataParallel, labelled dp_rank when there are
// several; each rank is a scheduler of its own and requests are dealt to the
// ranks in turn).
//
// GET /api/v1/key answers OpenRouter's key information: Config.KeyLimit,
// the usage (Config.KeyUsage plus every chat answer's usage.cost) and what
// is left; once nothing is left, chat requests answer 402.
package sim
