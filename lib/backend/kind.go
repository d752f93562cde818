package backend

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// Kind describes one kind of server API: everything a caller needs to know
// about it without comparing names. Each kind is one file of this package
// that registers its Kind; generate and the other tools read these fields
// and never test which kind they have.
type Kind struct {
	// Name is the --backend value and the "backend" of every result's
	// provenance.
	Name string
	// About says in a few words what it speaks, for --help.
	About string
	// Input is what a request record must carry for it.
	Input Input
	// NeedsModel says that every request names a model (--model, or the
	// body of an OpenAI Batch line).
	NeedsModel bool
	// BatchBody says what becomes of one member of an OpenAI Batch line's
	// body that the caller does not set itself (messages, sampling
	// parameters, model, streaming): sent along, sent inside the sampling
	// parameters, or left out. An error refuses the line, for a member
	// whose loss would make the answer pass for what it is not.
	BatchBody func(key string, value json.RawMessage) (BodyMember, error)
	// Auth puts the API key and the other headers a server wants on each
	// request.
	Auth Auth
	// KeyInfo says that the server may tell an API key's limit and spend
	// (OpenRouter's GET /key), which generate reads at the start.
	KeyInfo bool
	// Classify says what an answer with a status other than 200 means: retry,
	// record an error, or stop the run.
	Classify func(status int, header http.Header, body []byte) *Error
	// open builds the backend around a client that authenticates and
	// classifies as above.
	open func(c client) Backend
}

// New returns a backend of this kind.
func (k *Kind) New(opts Options) Backend {
	return k.open(newClient(opts, k))
}

// Input is what a backend sends from a request record.
type Input int

const (
	// TokenIDs: the prompt as token ids, the record's "input_ids"
	// (tokenize-prompts writes them). The server returns the answer's ids.
	TokenIDs Input = iota + 1
	// Messages: the conversation, the record's "messages" (and "tools").
	// The server returns text only; --tokenizer can add the ids.
	Messages
)

// BodyMember is where a member of an OpenAI Batch line's body goes.
type BodyMember int

const (
	// BodyDrop leaves the member out: it means nothing to the server.
	BodyDrop BodyMember = iota
	// BodyField sends it as a field of the request body.
	BodyField
	// BodySampling sends it among the sampling parameters (SGLang's
	// sampling_params).
	BodySampling
)

// Auth puts the credentials of o, and any other header the server wants,
// on a request's headers. It never sees the body.
type Auth func(h http.Header, o *Options)

// Bearer sends the key as "Authorization: Bearer <key>" (vLLM --api-key,
// SGLang --api-key, OpenAI).
func Bearer(h http.Header, o *Options) {
	if o.APIKey != "" {
		h.Set("Authorization", "Bearer "+o.APIKey)
	}
}

// BearerAttributed is Bearer plus OpenRouter's optional app attribution
// headers (HTTP-Referer, X-Title), which other servers ignore.
func BearerAttributed(h http.Header, o *Options) {
	Bearer(h, o)
	if o.Referer != "" {
		h.Set("HTTP-Referer", o.Referer)
	}
	if o.Title != "" {
		h.Set("X-Title", o.Title)
	}
}

// XAPIKey sends the key in an "x-api-key" header, as Anthropic's API and
// some gateways want it.
func XAPIKey(h http.Header, o *Options) {
	if o.APIKey != "" {
		h.Set("X-Api-Key", o.APIKey)
	}
}

// kinds is the registry, in the order the files register.
var kinds []*Kind

// register adds k to the registry; every kind's file calls it once.
func register(k *Kind) *Kind {
	if k.Name == "" || k.Input == 0 || k.BatchBody == nil || k.Auth == nil || k.Classify == nil || k.open == nil {
		panic("backend: kind " + k.Name + " is incomplete")
	}
	if _, dup := Lookup(k.Name); dup {
		panic("backend: kind " + k.Name + " registered twice")
	}
	kinds = append(kinds, k)
	return k
}

// Lookup finds the kind called name.
func Lookup(name string) (*Kind, bool) {
	for _, k := range kinds {
		if k.Name == name {
			return k, true
		}
	}
	return nil, false
}

// Kinds lists every kind, by name.
func Kinds() []*Kind {
	ks := slices.Clone(kinds)
	slices.SortFunc(ks, func(a, b *Kind) int { return strings.Compare(a.Name, b.Name) })
	return ks
}

// Names lists the kinds' names, by name.
func Names() []string {
	var names []string
	for _, k := range Kinds() {
		names = append(names, k.Name)
	}
	return names
}
