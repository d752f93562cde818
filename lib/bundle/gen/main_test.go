package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/synthpipe/synthpipe/lib/bundle"
)

// TestPromptsFresh fails when the committed sample prompts are not what the
// generator writes: run go run ./lib/bundle/gen -o lib/bundle/prompts.jsonl.zst.
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
	if !bytes.Equal(committed, generate()) {
		t.Fatal("lib/bundle/prompts.jsonl.zst is stale: run go run ./lib/bundle/gen -o lib/bundle/prompts.jsonl.zst")
	}
}
