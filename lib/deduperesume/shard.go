package deduperesume

import (
	"fmt"
	"strconv"
	"strings"
)

// shard is one part of a deterministic split of the ids: K of N.
type shard struct {
	k, n uint64
}

// parseShard reads "K/N"; the zero shard (N = 0) keeps everything.
func parseShard(s string) (shard, error) {
	if s == "" {
		return shard{}, nil
	}
	ks, ns, ok := strings.Cut(s, "/")
	k, kerr := strconv.ParseUint(ks, 10, 32)
	n, nerr := strconv.ParseUint(ns, 10, 32)
	if !ok || kerr != nil || nerr != nil {
		return shard{}, fmt.Errorf("--shard %q: want K/N with whole numbers, e.g. 0/4", s)
	}
	if n == 0 {
		return shard{}, fmt.Errorf("--shard %s: N is the number of shards, at least 1", s)
	}
	if k >= n {
		return shard{}, fmt.Errorf("--shard %s: K must be at least 0 and below N (shards of %d are numbered 0 to %d)", s, n, n-1)
	}
	return shard{k: k, n: n}, nil
}

// all reports whether the shard is the whole input.
func (s shard) all() bool { return s.n <= 1 }

// keeps reports whether id belongs to this shard.
func (s shard) keeps(id string) bool {
	return s.all() || fnv1a64(id)%s.n == s.k
}

// fnv1a64 is the 64-bit FNV-1a hash, written out so that shard membership
// can never change with a library: machines split work by it.
func fnv1a64(s string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}
