package tokenizer

import "unicode/utf8"

// Kimi's encode (tokenization_kimi.py) does not hand the whole text to
// tiktoken: it cuts it into windows of kimiWindowRunes characters, then
// cuts any run of more than kimiMaxRun consecutive whitespace or
// non-whitespace characters (Python's str.isspace), and encodes each chunk
// on its own. The cuts change the ids, so they are reproduced exactly.
const (
	kimiWindowRunes = 400_000
	kimiMaxRun      = 25_000
)

// forEachKimiChunk calls encode on each chunk of text, in order.
func forEachKimiChunk(text string, encode func(chunk string)) {
	if kimiSurelyOneChunk(text) {
		encode(text)
		return
	}
	for windowStart := 0; windowStart < len(text); {
		windowEnd, runes := windowStart, 0
		for windowEnd < len(text) && runes < kimiWindowRunes {
			_, n := utf8.DecodeRuneInString(text[windowEnd:])
			windowEnd += n
			runes++
		}
		splitLongRuns(text[windowStart:windowEnd], encode)
		windowStart = windowEnd
	}
}

// kimiSurelyOneChunk reports, reading a few bytes per kimiBlock of text,
// that Kimi's chunking leaves text whole; false tells nothing. Text of
// ordinary prose or code is one chunk, and deciding so by splitting it
// costs a class lookup per character, which ExtendOver paid for a whole
// conversation's prompt at each turn (more than encoding the turn).
//
// A run of more than kimiMaxRun characters spans more than kimiMaxRun
// bytes, so it holds one of the text's blocks of kimiBlock bytes whole
// (2*kimiBlock <= kimiMaxRun): a text whose blocks each hold an ASCII space
// and an ASCII non-space (a byte of neither kind belongs to a character
// outside ASCII, which may be a space or not) has no such run.
func kimiSurelyOneChunk(text string) bool {
	if len(text) <= kimiMaxRun { // fewer bytes than a run could need
		return true
	}
	if len(text) > kimiWindowRunes && utf8.RuneCountInString(text) > kimiWindowRunes {
		return false
	}
	for start := 0; start+kimiBlock <= len(text); start += kimiBlock {
		space, other := false, false
		for _, c := range []byte(text[start : start+kimiBlock]) {
			switch {
			case c >= utf8.RuneSelf:
			case asciiClasses[c]&classPySpace != 0:
				space = true
			default:
				other = true
			}
			if space && other {
				break
			}
		}
		if !space || !other {
			return false
		}
	}
	return true
}

// kimiBlock is the block size of kimiSurelyOneChunk.
const kimiBlock = kimiMaxRun / 2

// splitLongRuns cuts a window before the character that would make a run
// longer than kimiMaxRun.
func splitLongRuns(window string, encode func(chunk string)) {
	chunkStart, runLen, runSpace := 0, 0, false
	for i := 0; i < len(window); {
		_, c, n := runeAt(window, i)
		space := c&classPySpace != 0
		if i == 0 || space != runSpace {
			runLen, runSpace = 1, space
		} else {
			runLen++
			if runLen > kimiMaxRun {
				encode(window[chunkStart:i])
				chunkStart, runLen = i, 1
			}
		}
		i += n
	}
	encode(window[chunkStart:])
}
