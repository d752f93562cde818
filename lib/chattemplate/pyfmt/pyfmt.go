// Package pyfmt writes values as Python prints them. The template engine
// (lib/chattemplate) and the Kimi-K2.5 tool encoder (lib/kimitools) both
// reproduce Python's output byte for byte, and share what they print alike
// so that they cannot drift apart.
package pyfmt

import (
	"math"
	"strconv"
	"strings"
)

// FloatRepr is repr(f): the shortest digits that read back the same, in
// positional notation when the decimal exponent is in [-4, 16), scientific
// otherwise, always with a '.0' or an exponent; inf, -inf and nan.
func FloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±XX
	neg := ""
	if e[0] == '-' {
		neg = "-"
		e = e[1:]
	}
	mant, expPart, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expPart)
	digits := strings.Replace(mant, ".", "", 1)
	decpt := exp + 1 // the value is 0.DIGITS × 10^decpt
	if decpt > -4 && decpt <= 16 {
		var s string
		switch {
		case decpt <= 0:
			s = "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			s = digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			s = digits[:decpt] + "." + digits[decpt:]
		}
		return neg + s
	}
	s := digits[:1]
	if len(digits) > 1 {
		s += "." + digits[1:]
	}
	sign := "+"
	if exp < 0 {
		sign = "-"
		exp = -exp
	}
	es := strconv.Itoa(exp)
	if len(es) < 2 {
		es = "0" + es
	}
	return neg + s + "e" + sign + es
}
