package estimate

import (
	"fmt"
	"math"
	"strconv"

	"github.com/synthpipe/synthpipe/lib/backend"
)

// Every figure estimate reads (a flag, a server's metrics, a status file,
// a price list) is checked before it is used: a NaN, an infinity, a
// negative or an absurd one (1e-300 tokens per second, a price of 1e308)
// would come out as a negative time, a negative cost or
// -9,223,372,036,854,775,808. An unusable figure is named, and the estimate
// says what it could not compute.

// Bounds of the figures believed.
const (
	minRate = 1e-3 // tokens per second: one token in a quarter of an hour
	maxRate = 1e12
	// maxPricePerMillion is backend.MaxListedPrice per million tokens.
	maxPricePerMillion = backend.MaxListedPrice * perMillion
	maxHourlyCost      = 1e6
	// The most a report shows: past these, a figure is not computed
	// (a century of run time, a trillion dollars).
	maxSeconds = 100 * 365.25 * 24 * 3600
	maxUSD     = 1e12
)

// usableRate reports whether r is a speed (tokens per second) to believe.
func usableRate(r float64) bool { return r >= minRate && r <= maxRate } // false for NaN

// checkPrice refuses a price flag (USD) that is not a finite number from 0
// to most.
func checkPrice(flag string, v, most float64) error {
	if math.IsNaN(v) || v < 0 || v > most {
		return fmt.Errorf("--%s %s: want a price in USD from 0 to %s", flag, strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(most, 'g', -1, 64))
	}
	return nil
}

// bounded returns v, or nil with why when v is not a figure to show (not
// finite, negative, or past most).
func bounded(v float64, most float64, what, unit string, why *[]string) *float64 {
	if math.IsNaN(v) || v < 0 || v > most {
		*why = append(*why, fmt.Sprintf("%s (%s %s)", what, strconv.FormatFloat(v, 'g', 3, 64), unit))
		return nil
	}
	return &v
}
