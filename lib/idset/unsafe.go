package idset

import "unsafe"

// stringBytes views s as bytes without copying; the set only reads it (Add
// copies it into the arena).
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
