package cliutil

import (
	"strconv"
	"strings"
)

// Thousands writes n with a comma between groups of three digits
// (24,387,056): the summaries and tables people read are token counts.
func Thousands(n int64) string {
	digits := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, digits = "-", digits[1:]
	}
	var b strings.Builder
	b.WriteString(sign)
	for i := 0; i < len(digits); i++ {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(digits[i])
	}
	return b.String()
}

// Count writes "1 record", "2 records", "1,000 records": a count of noun for
// the summaries people read.
func Count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Thousands(n) + " " + noun + "s"
}
