package softfail

import (
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/synthpipe/synthpipe/lib/jsonl"
)

func TestCheck(t *testing.T) {
	loop := "[" + strings.Repeat("5,6,7,", 20) + "5]"
	cases := []struct {
		name string
		line string
		opt  Options
		want []string
	}{
		{"clean", `{"text":"hi","finish_reason":"stop","output_ids":[4,2],"native_finish_reason":{"type":"stop","matched":2}}`, Options{}, nil},
		{"an error record", `{"error":{"kind":"http"}}`, Options{}, nil},
		{"marker in the content", `{"text":"a</think>b</think>c","finish_reason":"stop"}`, Options{}, []string{MarkerLeak}},
		{"marker in the reasoning field", `{"text":"c","reasoning":"<think>r","finish_reason":"stop"}`, Options{}, []string{MarkerLeak}},
		{"SGLang text: reasoning, then content", `{"text":"r</think>c","thinking":true,"finish_reason":"stop"}`, Options{}, nil},
		{"thinking on, no reasoning", `{"text":"c","thinking":true,"finish_reason":"stop"}`, Options{}, []string{EmptyReasoning}},
		{"thinking on, blank reasoning", `{"text":"c","reasoning":" \n","thinking":true,"finish_reason":"stop"}`, Options{}, []string{EmptyReasoning}},
		{"thinking off, reasoning", `{"text":"c","reasoning":"r","thinking":false,"finish_reason":"stop"}`, Options{}, []string{ReasoningWhenOff}},
		{"tool call arguments not JSON", `{"text":"","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":"}}],"finish_reason":"tool_calls"}`, Options{}, []string{BadToolCall}},
		{"tool call without a name", `{"text":"","tool_calls":[{"function":{"arguments":"{}"}}],"finish_reason":"tool_calls"}`, Options{}, []string{BadToolCall}},
		{"good tool call", `{"text":"","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":1}"}}],"finish_reason":"tool_calls"}`, Options{}, nil},
		{"section not closed", `{"text":"x <|tool_calls_section_begin|> f","finish_reason":"stop"}`, Options{}, []string{BadToolCall}},
		{"hermes call not JSON", `{"text":"x <tool_call>{name</tool_call>","finish_reason":"stop"}`, Options{}, []string{BadToolCall}},
		{"stop without the matched id", `{"text":"x","finish_reason":"stop","output_ids":[4,5],"native_finish_reason":{"type":"stop","matched":2}}`, Options{}, []string{NoEndToken}},
		{"stop without a known end id", `{"text":"x","finish_reason":"stop","output_ids":[4,5]}`, Options{EndIDs: []int{9}}, []string{NoEndToken}},
		{"stop by a stop string", `{"text":"x","finish_reason":"stop","output_ids":[4,5],"native_finish_reason":{"type":"stop","matched":"\n\n"}}`, Options{EndIDs: []int{9}}, nil},
		{"no end id known", `{"text":"x","finish_reason":"stop","output_ids":[4,5]}`, Options{}, nil},
		{"ids loop to the limit", `{"text":"x","finish_reason":"length","output_ids":` + loop + `}`, Options{}, []string{Repetition}},
		{"words loop to the limit", `{"text":"` + strings.Repeat("the cat sat ", 12) + `","finish_reason":"length"}`, Options{}, []string{Repetition}},
		{"too short a loop", `{"text":"` + strings.Repeat("the cat sat ", 5) + `","finish_reason":"length"}`, Options{}, nil},
		{"a loop that ended", `{"text":"` + strings.Repeat("the cat sat ", 12) + `","finish_reason":"stop"}`, Options{}, nil},
		{"empty", `{"text":"  ","finish_reason":"stop"}`, Options{}, []string{Empty}},
		{"counts only: not checked", `{"finish_reason":"stop","completion_tokens":3}`, Options{}, nil},
		{"reasoning only", `{"text":"r</think>","finish_reason":"stop"}`, Options{}, []string{Empty}},
		{"cut in its reasoning is not empty", `{"text":"r r","thinking":true,"finish_reason":"length"}`, Options{}, nil},
		{"the end id from gen's stop_token_ids", `{"text":"x","finish_reason":"stop","output_ids":[ 4 , 5 ] ,"gen":{"params":{"stop_token_ids":[5]}}}`, Options{EndIDs: []int{9}}, nil},
		{"the last id read past white space", `{"text":"x","finish_reason":"stop","output_ids":[4,` + "\n" + `7 ]}`, Options{EndIDs: []int{7}}, nil},
		{"a last id that is not a number", `{"text":"x","finish_reason":"stop","output_ids":[4,"9"]}`, Options{EndIDs: []int{9}}, nil},
		{"no ids", `{"text":"x","finish_reason":"stop","output_ids":[]}`, Options{EndIDs: []int{9}}, nil},
		{"the first of duplicate keys, as gjson reads it", `{"text":"x","finish_reason":"stop","finish_reason":"length","output_ids":[4,5]}`, Options{EndIDs: []int{9}}, []string{NoEndToken}},
		{"an escaped key", `{"t\u0065xt":"  ","finish_reason":"stop"}`, Options{}, []string{Empty}},
		{"strings that hold brackets and quotes", `{"id":"]}\"{[","text":"a</think>","tool_calls":[{"function":{"name":"f","arguments":"{\"a\":\"]\"}"}}],"finish_reason":"stop"}`, Options{}, nil},
		{"a conversation's turns", `{"turns":[{"text":"a","finish_reason":"stop"},{"text":"b</think>c</think>","finish_reason":"stop"},{"text":"","finish_reason":"stop"}]}`, Options{}, []string{MarkerLeak, Empty}},
	}
	// One Members read record after record, as tokstat's reader reuses
	// them, over the cases and texts with escapes (decoded into its own
	// buffers): the same results as Check's own walk.
	var shared Members
	escaped := []string{
		`{"text":"a\u003c/think\u003eb\n","finish_reason":"stop"}`,
		`{"reasoning":"r\n\t\"q\"","text":"\u00e9\ud83d\ude80 ok","finish_reason":"stop"}`,
		`{"reasoning":"\ud83d alone","text":"  \n ","finish_reason":"stop"}`,
		`{"text":"x\\</think>y","thinking":true,"finish_reason":"length","output_ids":[5,6,7]}`,
	}
	for _, tc := range cases {
		escaped = append(escaped, tc.line)
	}
	for _, line := range escaped {
		for _, opt := range []Options{{}, {EndIDs: []int{9}}} {
			shared.Reset()
			if err := jsonl.ScanObject([]byte(line), shared.Visit); err != nil {
				t.Fatal(err)
			}
			if got, want := CheckMembers(&shared, opt), Check([]byte(line), opt); !slices.Equal(got, want) {
				t.Errorf("%s: CheckMembers = %v, Check = %v", line, got, want)
			}
			// the texts read as gjson decodes them
			for _, f := range []struct {
				field string
				got   gjson.Result
			}{{"text", shared.a.text}, {"reasoning", shared.a.reasoning}} {
				if want := gjson.Get(line, f.field); f.got.String() != want.String() || f.got.Exists() != want.Exists() {
					t.Errorf("%s: %s read as %q, gjson reads %q", line, f.field, f.got.String(), want.String())
				}
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Check([]byte(tc.line), tc.opt); !slices.Equal(got, tc.want) {
				t.Fatalf("Check = %v, want %v", got, tc.want)
			}
			// The same members, picked by the scan that validates the
			// record (as tokstat does), give the same result.
			var m Members
			m.Visit(jsonl.Member{Key: []byte("error"), Value: []byte(`"of the record before"`)})
			m.Reset()
			if err := jsonl.ScanObject([]byte(tc.line), m.Visit); err != nil {
				t.Fatal(err)
			}
			if got := CheckMembers(&m, tc.opt); !slices.Equal(got, tc.want) {
				t.Fatalf("CheckMembers = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLoopingPeriods(t *testing.T) {
	for p := 1; p <= MaxPeriod; p++ {
		var toks []string
		for i := 0; i < max(MinLoop, 4*p)+3; i++ {
			toks = append(toks, string(rune('a'+i%p%26))+string(rune('A'+i%p/26)))
		}
		if !looping(toks) {
			t.Fatalf("period %d not found", p)
		}
	}
	var distinct []string
	for i := 0; i < 500; i++ {
		distinct = append(distinct, string(rune(0x4e00+i)))
	}
	if looping(distinct) {
		t.Fatal("distinct tokens found looping")
	}
}
