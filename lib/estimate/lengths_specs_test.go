package estimate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/lengthdist/lengthdisttest"
)

// Every spec of the shared table of --lengths specs means to estimate what
// the table's estimate column says.
func TestLengthSpecsTable(t *testing.T) {
	for _, row := range lengthdisttest.Rows(t) {
		t.Run(row.Name, func(t *testing.T) {
			got := "error"
			if d, err := parseLengths(row.Spec, 0); err == nil {
				got = describeLengths(d)
			}
			if got != row.Estimate {
				t.Errorf("estimate makes %s of it, the table says %s", got, row.Estimate)
			}
		})
	}
}

// describeLengths is what the table of specs writes for d.
func describeLengths(d lengths) string {
	switch d := d.(type) {
	case *uniform:
		return fmt.Sprintf("uniform:%d,%d limit %d", d.lo, d.hi, d.limit)
	case *lognormal:
		return fmt.Sprintf("lognormal median %.9g sigma %.9g limit %d", math.Exp(d.Mu), d.Sigma, d.limit)
	case *empirical:
		return "file " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(d.values)), ","), "[]")
	}
	return fmt.Sprintf("%T", d)
}
