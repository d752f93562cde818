package tokenizeprompts

import (
	"fmt"
	"sort"
	"strings"

	"github.com/synthpipe/synthpipe/lib/cliutil"
	"github.com/synthpipe/synthpipe/lib/thinking"
)

// thinkingTally counts the settings the written records were rendered
// with, so that the summary shows the mix achieved beside the one asked.
type thinkingTally struct {
	on, off int64
	effort  map[string]int64
}

func (t *thinkingTally) add(c *thinking.Choice) {
	switch {
	case c == nil:
	case c.Effort != "":
		if t.effort == nil {
			t.effort = map[string]int64{}
		}
		t.effort[c.Effort]++
	case c.Thinking:
		t.on++
	default:
		t.off++
	}
}

// String is "thinking on for 31 of 100 (31.0%; --thinking mix:0.3)" or,
// by levels, "reasoning_effort high 25, low 24, medium 51 (--thinking ...)".
func (t *thinkingTally) String(m thinking.Mode) string {
	if len(t.effort) > 0 {
		names := make([]string, 0, len(t.effort))
		for k := range t.effort {
			names = append(names, k)
		}
		sort.Strings(names)
		parts := make([]string, len(names))
		for i, k := range names {
			parts[i] = k + " " + cliutil.Thousands(t.effort[k])
		}
		return fmt.Sprintf("reasoning_effort %s (--thinking %s)", strings.Join(parts, ", "), m)
	}
	n := t.on + t.off
	share := 0.0
	if n > 0 {
		share = 100 * float64(t.on) / float64(n)
	}
	return fmt.Sprintf("thinking on for %s of %s (%.1f%%; --thinking %s asks %.1f%%)",
		cliutil.Thousands(t.on), cliutil.Thousands(n), share, m, 100*m.Share())
}
