package generate

import (
	"bytes"
	"io"
	"os"
)

// countRecords counts the lines of the inputs when all of them are regular
// uncompressed files (stdin included), for the ETA; 0 when that is not
// known cheaply. It reads with ReadAt, so stdin's offset does not move.
func countRecords(stdin io.Reader, names []string) int64 {
	if len(names) == 0 {
		names = []string{"-"}
	}
	var total int64
	for _, name := range names {
		var f *os.File
		if name == "-" {
			sf, ok := stdin.(*os.File)
			if !ok {
				return 0
			}
			f = sf
		} else {
			// Only a regular file may be opened twice: a named pipe or a
			// process substitution would lose what this read took.
			if fi, err := os.Stat(name); err != nil || !fi.Mode().IsRegular() {
				return 0
			}
			of, err := os.Open(name)
			if err != nil {
				return 0
			}
			defer of.Close()
			f = of
		}
		n, ok := countLines(f)
		if !ok {
			return 0
		}
		total += n
	}
	return total
}

// Magic numbers of the compressed inputs jsonl reads.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

func countLines(f *os.File) (int64, bool) {
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0, false
	}
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, false
	}
	buf := make([]byte, 256<<10)
	var n int64
	for off := start; ; {
		k, err := f.ReadAt(buf, off)
		if off == start && (bytes.HasPrefix(buf[:k], gzipMagic) || bytes.HasPrefix(buf[:k], zstdMagic)) {
			return 0, false
		}
		n += int64(bytes.Count(buf[:k], []byte{'\n'}))
		off += int64(k)
		if err == io.EOF {
			if k > 0 && buf[k-1] != '\n' {
				n++
			}
			return n, true
		}
		if err != nil {
			return 0, false
		}
	}
}
