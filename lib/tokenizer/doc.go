// Package tokenizer is a byte-exact Go port of the byte-level BPE encoders
// of Hugging Face tokenizers (tokenizer.json) and of tiktoken rank files,
// Moonshot's Kimi variant included. Encode gives the ids the reference
// implementations give: HF tokenizers with add_special_tokens=false, and
// tiktoken with Kimi's chunking.
//
// # Models
//
// Load takes a model folder or a single file. tokenizer.json models must
// be byte-level BPE; their Split pre-tokenizers are recognised by the exact
// text of their regex (Qwen2/Qwen3, Llama 3, DeepSeek-V3, o200k/gpt-oss)
// and run by hand-written matchers, because Go's regexp has no lookahead.
// Another regex runs on a generic backtracking matcher (much slower; the
// tests use it as the oracle of the hand-written ones), and one it cannot
// parse (lookbehind, say) is a load error. Merges follow the merge-rule ranks of
// the file (HF's rule); ignore_merges is honoured.
//
// A folder with a tiktoken rank file is a Kimi model when its
// tokenizer_config.json maps AutoTokenizer to the tokenization_kimi
// module: it then gets Kimi's pattern, the 256 special ids after the ranks
// (named by added_tokens_decoder, the rest <|reserved_token_N|>) and Kimi's
// chunking of long texts. Any other rank file gets the o200k pattern.
//
// # Modes
//
// With parseSpecial, added-token strings in the text become their ids.
// Without it, special tokens are ordinary text, while tokenizer.json's
// non-special added tokens (Qwen3's <think>, DeepSeek's <｜User｜>) are still
// matched, as HF does; tiktoken models then match no added token at all
// (encode_ordinary).
//
// # Round trip
//
// Decode(Encode(s)) == s for every s, except that a tokenizer with a
// normalizer (Qwen3's NFC) gives back the normalized text, and invalid
// UTF-8 comes back as U+FFFD there.
//
// # Unicode versions
//
// Being byte-exact means using the Unicode data the references use. The
// pre-tokenizer classes are Go's unicode tables (Unicode 15.0) brought to
// Unicode 16.0 by unicode_updates.go, as Oniguruma and Rust's regex in the
// references classify. NFC follows HF's normalizer, whose data is Unicode
// 9.0: combining marks assigned later are starters (nfc_tables.go).
//
// # Concurrency and speed
//
// A Tokenizer is immutable after Load apart from a lock-free cache of
// merged pieces, so one Tokenizer can serve many goroutines. Pieces longer
// than 128 symbols are merged with a tournament tree in O(n log n). The
// hand-written matchers decide ASCII text with a table of byte kinds and
// leave a match to the Unicode class tables where a non-ASCII rune could
// change it (match_ascii.go).
package tokenizer
