package cliutil

import (
	"math"
	"testing"
)

func TestThousands(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {100000, "100,000"}, {-1234567, "-1,234,567"},
		{math.MinInt64, "-9,223,372,036,854,775,808"},
	} {
		if got := Thousands(tc.n); got != tc.want {
			t.Errorf("Thousands(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 records"},
		{1, "1 record"},
		{2, "2 records"},
		{12345, "12,345 records"},
	} {
		if got := Count(tc.n, "record"); got != tc.want {
			t.Errorf("Count(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
