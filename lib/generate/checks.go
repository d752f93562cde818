package generate

import (
	"github.com/synthpipe/synthpipe/lib/backend"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/engine"
)

// The checks of flags that the engine's parts take, against each other.

// checkFormats checks --input-format and --output-format against the other
// flags.
func checkFormats(cfg *config) error {
	if cfg.InputFormat == engine.FormatOpenAIBatch && cfg.Kind.Input == backend.TokenIDs && cfg.Tokenizer == "" {
		return cliutil.Usagef("--%s %s with --%s %s needs --%s DIR: it takes token ids, and the chat template and tokenizer in DIR turn each body's messages into them",
			flagInputFormat, engine.FormatOpenAIBatch, flagBackend, cfg.Kind.Name, flagTokenizer)
	}
	return nil
}

// checkTurns checks --turns against the other flags: regenerating whole
// conversations on a backend that takes token ids needs the model's
// tokenizer to render each turn and read each answer.
func checkTurns(cfg *config, batchInput bool) error {
	if !cfg.TurnsAll {
		return nil
	}
	if batchInput {
		return cliutil.Usagef("--%s all reads conversation records (tokenize-prompts --turns all), not --input-format %s", flagTurns, engine.FormatOpenAIBatch)
	}
	if cfg.Kind.Input == backend.TokenIDs && cfg.Tokenizer == "" {
		return cliutil.Usagef("--%s all with --%s %s needs --%s: every turn's prompt is rendered with the model's chat template and its answer read back from its token ids",
			flagTurns, flagBackend, cfg.Kind.Name, flagTokenizer)
	}
	return nil
}

// checkSamples refuses --samples values and combinations that cannot work.
func checkSamples(cfg *config) error {
	if cfg.Samples > 1 && (cfg.InputFormat == engine.FormatOpenAIBatch || cfg.OutputFormat == engine.FormatOpenAIBatch) {
		return cliutil.Usagef("--%s is for records (--input-format and --output-format %s): an OpenAI Batch file names each request by its custom_id, once",
			flagSamples, engine.FormatRecords)
	}
	return nil
}
