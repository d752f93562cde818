package sim

import (
	"fmt"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/lengthdist/lengthdisttest"
)

// Every spec of the shared table of --lengths specs means to llm-sim what
// the table's llm-sim column says.
func TestLengthSpecsTable(t *testing.T) {
	for _, row := range lengthdisttest.Rows(t) {
		t.Run(row.Name, func(t *testing.T) {
			got := "error"
			if d, err := ParseLengthDist(row.Spec); err == nil {
				got = d.String()
				if d.Kind == LengthEmpirical {
					got = "file " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(d.Values)), ","), "[]")
				}
			}
			if got != row.Sim {
				t.Errorf("llm-sim makes %s of it, the table says %s", got, row.Sim)
			}
		})
	}
}
