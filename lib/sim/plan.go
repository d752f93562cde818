package sim

import (
	"slices"
	"strings"
)

// finishKind is how a generation ended, SGLang's finish_reason.type.
type finishKind uint8

const (
	finishNone finishKind = iota
	finishStop
	finishLength
	finishAbort
)

// finishReason mirrors SGLang's meta_info.finish_reason:
// {type: stop, matched: <id or string>}, {type: length, length: N} or
// {type: abort, message, status_code?}.
type finishReason struct {
	kind       finishKind
	matchedID  int
	matchedStr string
	byID       bool // matched is matchedID (a stop token) rather than matchedStr
	length     int
	message    string
	statusCode int // abort only; 0 means absent
}

// finishJSON is the wire form of finishReason, fields in SGLang's order.
type finishJSON struct {
	Type       string `json:"type"`
	Matched    any    `json:"matched,omitempty"`
	Length     *int   `json:"length,omitempty"`
	Message    string `json:"message,omitempty"`
	StatusCode int    `json:"status_code,omitempty"`
}

// sglangJSON renders the finish reason the way /generate reports it; nil
// (JSON null) while the request is still running.
func (f finishReason) sglangJSON() *finishJSON {
	switch f.kind {
	case finishStop:
		if f.byID {
			return &finishJSON{Type: "stop", Matched: f.matchedID}
		}
		return &finishJSON{Type: "stop", Matched: f.matchedStr}
	case finishLength:
		return &finishJSON{Type: "length", Length: &f.length}
	case finishAbort:
		return &finishJSON{Type: "abort", Message: f.message, StatusCode: f.statusCode}
	}
	return nil
}

// genParams are the sampling parameters that shape an answer. Temperature,
// top_p and friends are validated but do not change the simulated output.
type genParams struct {
	maxNew      int
	ignoreEOS   bool
	stopIDs     []int
	stopStrs    []string
	noStopTrim  bool
	skipSpecial bool
}

// plan is everything about one answer that is known before it is generated:
// because outputs are deterministic, the engine only has to count tokens.
type plan struct {
	key      uint64
	params   genParams
	vocab    int
	eos      int
	eosText  string
	total    int  // output ids produced when the answer ends normally
	eosAtEnd bool // the last of them is the EOS id
	finish   finishReason

	// explicit is the whole natural answer, its EOS last, when the answer
	// is written in a model's format (Config.AnswerFormat); kimi writes
	// and shows it. Both nil: ids from the prompt's hash, shown as words.
	explicit []int
	kimi     *kimiFormat

	// failAt >= 0 makes the engine end the request with failure after
	// failAt tokens; injected mid-stream errors and aborts use it.
	failAt  int
	failure finishReason

	// loopPeriod > 0 (FaultRepetition): from loopFrom on, the answer
	// repeats its tokens [loopFrom, loopFrom+loopPeriod).
	loopFrom, loopPeriod int
	// leakAt > 0 (FaultMarkerLeak): the text shows leakMarker after that
	// many output ids.
	leakAt int
}

// The shape of the injected faults that change the answer itself.
const (
	loopFrom   = 8
	loopPeriod = 4
	leakMarker = "<think>"
)

// makePlan decides length and finish reason of the answer to prompt key.
// natural is the answer length drawn from the length distribution.
func makePlan(cfg *Config, key uint64, natural int, p genParams) plan {
	pl := plan{key: key, params: p, vocab: cfg.VocabSize, eos: cfg.EOSTokenID, eosText: cfg.EOSText, failAt: -1}
	pl.decide(natural)
	return pl
}

// makeKimiPlan plans the answer to prompt written as Kimi-K2.5 writes it.
func makeKimiPlan(cfg *Config, k *kimiFormat, prompt []int, key uint64, natural int, p genParams) plan {
	pl := plan{key: key, params: p, vocab: cfg.VocabSize, eos: k.imEnd, failAt: -1, kimi: k}
	pl.explicit = k.answer(prompt, key, natural, cfg.ReasoningShare)
	pl.decide(len(pl.explicit) - 1)
	return pl
}

// decide sets the answer's length and finish reason from its natural
// length (the tokens before its EOS) and the sampling parameters.
func (pl *plan) decide(natural int) {
	p := pl.params
	limit := p.maxNew
	if !p.ignoreEOS && natural < limit {
		limit = natural
	}
	if len(p.stopIDs) > 0 || len(p.stopStrs) > 0 {
		var text strings.Builder
		for i := 0; i < limit; i++ {
			id := pl.contentAt(i)
			if slices.Contains(p.stopIDs, id) {
				pl.total = i + 1
				pl.finish = finishReason{kind: finishStop, byID: true, matchedID: id}
				return
			}
			if len(p.stopStrs) == 0 {
				continue
			}
			text.WriteString(pl.render([]int{id}))
			if s, ok := endsWithStop(text.String(), p.stopStrs); ok {
				pl.total = i + 1
				pl.finish = finishReason{kind: finishStop, matchedStr: s}
				return
			}
		}
	}
	if !p.ignoreEOS && natural < p.maxNew {
		pl.total = natural + 1
		pl.eosAtEnd = true
		pl.finish = finishReason{kind: finishStop, byID: true, matchedID: pl.eos}
		return
	}
	pl.total = p.maxNew
	pl.finish = finishReason{kind: finishLength, length: p.maxNew}
}

// contentAt is answer id i when it is not the final EOS.
func (p *plan) contentAt(i int) int {
	if p.loopPeriod > 0 && i >= p.loopFrom {
		i = p.loopFrom + (i-p.loopFrom)%p.loopPeriod
	}
	switch {
	case p.explicit != nil && i < len(p.explicit)-1:
		return p.explicit[i]
	case p.kimi != nil:
		return p.kimi.word(p.key, i)
	}
	return contentID(p.key, i, p.vocab, p.eos)
}

// render shows ids as text: words, or the model's tokens decoded without
// its special tokens (unless skip_special_tokens is false).
func (p *plan) render(ids []int) string {
	if p.kimi != nil {
		if !p.params.skipSpecial {
			s, _ := p.kimi.tok.Decode(ids)
			return s
		}
		return p.kimi.text(ids)
	}
	var b strings.Builder
	renderInto(&b, ids, p.eos)
	return b.String()
}

// endsWithStop reports the stop string that appears in text for the first
// time because of its last word. Only the tail is searched, which keeps the
// scan linear in the answer length.
func endsWithStop(text string, stops []string) (string, bool) {
	lastWord := strings.LastIndexByte(text, ' ')
	for _, s := range stops {
		if s == "" {
			continue
		}
		from := max(lastWord-len(s)+1, 0)
		if strings.Contains(text[from:], s) {
			return s, true
		}
	}
	return "", false
}

// end is the number of output ids after which the engine finishes the
// request, and the finish reason it reports.
func (p *plan) end() (int, finishReason) {
	if p.failAt >= 0 && p.failAt < p.total {
		return p.failAt, p.failure
	}
	return p.total, p.finish
}

// contentTokens is the number of output ids that are not the final EOS.
func (p *plan) contentTokens() int {
	if p.eosAtEnd {
		return p.total - 1
	}
	return p.total
}

// idAt is output id i of the answer.
func (p *plan) idAt(i int) int {
	if p.eosAtEnd && i == p.total-1 {
		return p.eos
	}
	return p.contentAt(i)
}

// ids returns output ids [from, to).
func (p *plan) ids(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, p.idAt(i))
	}
	return out
}

// text renders the first n output ids. Once the answer finished by a stop
// token or string, the stop is trimmed from the text unless no_stop_trim,
// as SGLang's detokenizer does; output_ids keep the stop token regardless.
func (p *plan) text(n int, fin finishReason) string {
	final := fin.kind != finishNone
	ids := p.ids(0, n)
	if final && fin.kind == finishStop && fin.byID && !p.params.noStopTrim && len(ids) > 0 {
		ids = ids[:len(ids)-1]
	}
	s := p.render(ids)
	if p.leakAt > 0 && len(ids) > p.leakAt {
		s = p.render(ids[:p.leakAt]) + leakMarker + p.render(ids[p.leakAt:])
	}
	if p.kimi == nil && len(ids) > 0 && ids[len(ids)-1] == p.eos && !p.params.skipSpecial {
		s += p.eosText
	}
	if final && fin.kind == finishStop && !fin.byID {
		if pos := strings.Index(s, fin.matchedStr); pos >= 0 {
			if p.params.noStopTrim {
				return s[:pos+len(fin.matchedStr)]
			}
			return s[:pos]
		}
	}
	return s
}
