package totrain

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/synthpipe/synthpipe/lib/bundle"
	"github.com/synthpipe/synthpipe/lib/chat"
	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/draftvocab"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/statusfile"
)

// vocabJob is --draft-vocab: the sizes and where the mapping goes.
type vocabJob struct {
	draft, target int
	out           string
}

// vocabJob checks --draft-vocab, --draft-vocab-out and --target-vocab
// against the other flags; nil when no draft vocabulary is asked for.
func (cfg *config) vocabJob(c *cli.Context) (*vocabJob, error) {
	n, out := cfg.draftVocab, cfg.draftVocabOut
	switch {
	case !c.IsSet(flagDraftVocab) && out == "":
		return nil, nil
	case cfg.show != nil:
		return nil, cliutil.Usagef("--show prints samples for reading; it writes no training data to choose a --%s from", flagDraftVocab)
	case n <= 0:
		return nil, cliutil.Usagef("--%s %d: give the draft's vocabulary size, e.g. 32000 (its config's draft_vocab_size)", flagDraftVocab, n)
	case out == "":
		return nil, cliutil.Usagef("--%s needs --%s FILE: where the mapping is written", flagDraftVocab, flagDraftVocabOut)
	case cfg.format != formatTokens:
		return nil, cliutil.Usagef("--%s counts the loss-masked tokens of --format tokens: give --format tokens", flagDraftVocab)
	}
	target := cfg.targetVocab
	if !c.IsSet(flagTargetVocab) {
		var err error
		if target, err = configVocabSize(cfg.template.Tokenizer); err != nil {
			return nil, err
		}
	}
	if target <= 0 || n > target {
		return nil, cliutil.Usagef("--%s %d with a target vocabulary of %d: the draft's must be positive and no larger", flagDraftVocab, n, target)
	}
	return &vocabJob{draft: n, target: target, out: out}, nil
}

// configVocabSize is the vocab_size of the model folder's config.json (or
// its text_config's, for multimodal models): the target vocabulary SpecForge
// sizes t2d by, often larger than the tokenizer's (padded for the GPU).
func configVocabSize(dir string) (int, error) {
	if dir == "" {
		return 0, cliutil.Usagef("--%s needs the target's vocabulary size: give --%s N (its config.json's vocab_size) or --tokenizer DIR with a config.json", flagDraftVocab, flagTargetVocab)
	}
	if dir == chat.BuiltinPrefix+bundle.TokenizerName {
		return bundle.VocabSize, nil
	}
	path := filepath.Join(dir, "config.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, cliutil.Usagef("--%s: %s has no config.json to read vocab_size from: give --%s N", flagDraftVocab, dir, flagTargetVocab)
	}
	if err != nil {
		return 0, cliutil.Usagef("--%s: %v", flagDraftVocab, err)
	}
	var cfg struct {
		VocabSize  int `json:"vocab_size"`
		TextConfig struct {
			VocabSize int `json:"vocab_size"`
		} `json:"text_config"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return 0, cliutil.Usagef("--%s: %s: %v", flagDraftVocab, path, err)
	}
	if cfg.VocabSize == 0 {
		cfg.VocabSize = cfg.TextConfig.VocabSize
	}
	if cfg.VocabSize <= 0 {
		return 0, cliutil.Usagef("--%s: %s has no vocab_size: give --%s N", flagDraftVocab, path, flagTargetVocab)
	}
	return cfg.VocabSize, nil
}

// write chooses the draft vocabulary from the counts and puts it in place
// whole (a temporary file renamed over the target), returning what to say
// in the summary.
func (j *vocabJob) write(counts *draftvocab.Counter) (string, error) {
	m, err := counts.Mapping(j.draft, j.target)
	if err != nil {
		return "", exitcode.DataErrorf("--%s: %v", flagDraftVocab, err)
	}
	if err := statusfile.WriteAtomic(j.out, m.JSON()); err != nil {
		return "", exitcode.CantCreatef("--%s: %v", flagDraftVocabOut, err)
	}
	return fmt.Sprintf("draft vocabulary of %d from %d distinct tokens, holding %.2f%% of the answer tokens, written to %s",
		j.draft, counts.Distinct(), 100*m.Covered, j.out), nil
}
