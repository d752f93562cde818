package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/synthpipe/synthpipe/lib/bundle"
)

// TestPromptsFresh fails when the committed sample prompts are not what the
// generator writes: run go run ./lib/bundle/gen -o lib/bundle/prompts.
func TestPromptsFresh(t *testing.T) {
	r, err := bundle.Prompts()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	committed, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, d := range generate() {
		want = append(want, d.data...)
	}
	if !bytes.Equal(committed, want) {
		t.Fatal("lib/bundle/prompts is stale: run go run ./lib/bundle/gen -o lib/bundle/prompts")
	}
}
