package record

import "fmt"

// CountMode says which tokens of a record count against a budget.
type CountMode int

// The count modes of --count.
const (
	CountTotal      CountMode = iota // prompt + completion
	CountPrompt                      // prompt only
	CountCompletion                  // completion only
)

// ParseCountMode reads a --count value.
func ParseCountMode(s string) (CountMode, error) {
	switch s {
	case "", "total":
		return CountTotal, nil
	case "prompt":
		return CountPrompt, nil
	case "completion":
		return CountCompletion, nil
	}
	return 0, fmt.Errorf("--count %q: want total, prompt or completion", s)
}

func (m CountMode) String() string {
	switch m {
	case CountPrompt:
		return "prompt"
	case CountCompletion:
		return "completion"
	}
	return "total"
}
