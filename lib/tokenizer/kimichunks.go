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
	if len(text) <= kimiMaxRun { // fewer bytes than a run could need: one chunk
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

// splitLongRuns cuts a window before the character that would make a run
// longer than kimiMaxRun.
func splitLongRuns(window string, encode func(chunk string)) {
	chunkStart, runLen, runSpace := 0, 0, false
	for i := 0; i < len(window); {
		r, n := utf8.DecodeRuneInString(window[i:])
		space := classOf(r)&classPySpace != 0
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
