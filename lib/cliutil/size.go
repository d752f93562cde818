package cliutil

import (
	"fmt"
	"math"
	"math/big"
	"strings"
)

// ParseCount reads a count such as 250k, 10M, 1.5G or 12345. Suffixes are
// powers of ten (k, M, G, T; case-insensitive except that "m" is accepted for
// "M" since nobody means milli-tokens); Ki, Mi, Gi, Ti are powers of two, for
// byte sizes. The result must be a whole, non-negative number. The arithmetic
// is exact: 1.005k is 1005, where floating point would make it 1004.999...
func ParseCount(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("empty number")
	}
	mult := int64(1)
	lower := strings.ToLower(t)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{
		{"ki", 1 << 10}, {"mi", 1 << 20}, {"gi", 1 << 30}, {"ti", 1 << 40},
		{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12},
	} {
		if strings.HasSuffix(lower, u.suffix) {
			mult = u.mult
			t = t[:len(t)-len(u.suffix)]
			break
		}
	}
	v, ok := new(big.Rat).SetString(t)
	if !isDecimal(t) || !ok {
		return 0, fmt.Errorf("%q is not a number (try 250k, 10M, 1.5G or 12345)", s)
	}
	if v.Sign() < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	v.Mul(v, new(big.Rat).SetInt64(mult))
	if !v.IsInt() {
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	if n := v.Num(); !n.IsInt64() || n.Int64() > math.MaxInt64/2 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return v.Num().Int64(), nil
}

// isDecimal reports whether t is digits with at most one '.', optionally
// negative: what people write for a count. strconv.ParseFloat alone would
// also take "0x10", "1e3", "Inf" and "NaN".
func isDecimal(t string) bool {
	t = strings.TrimPrefix(t, "-")
	digits, dots := 0, 0
	for i := 0; i < len(t); i++ {
		switch c := t[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// ParseBudget reads the value of a budget flag (budget-cut --tokens,
// generate --token-budget, estimate and tokstat --budget) as ParseCount does.
// A budget of 0 is refused with 64 in every tool, the same way: it would let
// nothing through, and no tool reads 0 as "no budget". none says how to
// mean that instead.
func ParseBudget(flag, s, none string) (int64, error) {
	n, err := ParseCount(s)
	if err != nil {
		return 0, Usagef("--%s: %v", flag, err)
	}
	if n == 0 {
		return 0, Usagef("--%s 0: a budget of 0 lets nothing through (0 is never \"no budget\"): %s", flag, none)
	}
	return n, nil
}

// FlagMaxTrainLength is the flag, in tokstat, budget-cut and estimate, of
// the trainer's sequence length: the tokens of a record past it are cut off
// in training, though the budget paid for them.
const FlagMaxTrainLength = "max-train-length"

// MaxTrainLengthUsage is that flag's help, the same in every tool.
const MaxTrainLengthUsage = "also report the tokens a trainer with sequence length `N` (e.g. SpecForge's default max_length 2048; 4k, 32k) cuts off the records longer than it: paid for, never trained"

// ParseMaxTrainLength reads --max-train-length: a count from 1 up.
func ParseMaxTrainLength(flag, s string) (int64, error) {
	n, err := ParseCount(s)
	if err != nil {
		return 0, Usagef("--%s: %v", flag, err)
	}
	if n == 0 {
		return 0, Usagef("--%s 0: a trainer's sequence length is at least 1 token (leave the flag out for no such report)", flag)
	}
	return n, nil
}
