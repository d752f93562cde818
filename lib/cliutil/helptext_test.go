package cliutil

import (
	"strings"
	"testing"
)

func TestPercent(t *testing.T) {
	for share, want := range map[float64]string{0.1: "10%", 0.9: "90%", 0.05: "5%", 0.025: "2.5%", 1: "100%"} {
		if got := Percent(share); got != want {
			t.Errorf("Percent(%g) = %q, want %q", share, got, want)
		}
	}
}

func TestFillHelp(t *testing.T) {
	got := FillHelp("tool", "starts at {{.Start}}, plus {{.Margin}}", struct {
		Start  int
		Margin string
	}{16, Percent(0.1)})
	if want := "starts at 16, plus 10%"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "tool: help:") {
			t.Errorf("a help text naming a value it is not given: recovered %v, want a panic naming the tool", r)
		}
	}()
	FillHelp("tool", "{{.Missing}}", struct{}{})
}
