package tokenizer

import "fmt"

// The pre-tokenizer regexes synthpipe implements, spelled exactly as the
// model files spell them. Go's regexp has no lookahead, so each family has
// a hand-written matcher; another regex runs on the slower backtracking
// matcher.
const (
	// patternQwen3 is Qwen2/Qwen3's: cl100k with single digits.
	patternQwen3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternLlama3 is Llama 3's: cl100k with up to three digits.
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternO200k is o200k_base's (gpt-oss).
	patternO200k = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternKimi is tokenization_kimi.py's.
	patternKimi = `[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// The three Splits of DeepSeek-V3 (the third holds raw CR and LF).
	patternDeepSeekDigits = `\p{N}{1,3}`
	patternDeepSeekCJK    = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
	patternDeepSeekWords  = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

// knownPatterns holds pointers, and their matchAt methods take pointer
// receivers: called through the interface, a method of a value receiver
// goes through a generated wrapper that copies the value and calls it, a
// call more per piece (about 12 instructions of some 400 a piece of
// Kimi's ExtendOver took).
var knownPatterns = map[string]matcher{
	patternQwen3:          &cl100kMatcher{maxDigits: 1},
	patternLlama3:         &cl100kMatcher{maxDigits: 3},
	patternO200k:          &o200kMatcher{slashTrails: true},
	patternKimi:           &o200kMatcher{leadingHan: true},
	patternDeepSeekDigits: &numberMatcher{max: 3},
	patternDeepSeekCJK:    &cjkKanaMatcher{},
	patternDeepSeekWords:  &deepseekWordMatcher{},
}

// matcherForPattern returns the hand-written matcher of a known regex, or
// the backtracking fallback for another one; a regex the fallback cannot
// parse is an error.
func matcherForPattern(regex string) ([]matcher, error) {
	if m, ok := knownPatterns[regex]; ok {
		return []matcher{m}, nil
	}
	m, err := newBacktrackMatcher(regex)
	if err != nil {
		short := regex
		if len(short) > 80 {
			short = short[:80] + "..."
		}
		return nil, fmt.Errorf("unknown pre-tokenizer pattern %q, which the generic matcher cannot run either: %w", short, err)
	}
	return []matcher{m}, nil
}
