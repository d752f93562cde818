// Command parquetgen writes a large Parquet file of ShareGPT-style
// conversations (id, conversations: list of {from, value}), snappy, in row
// groups of 20,000 rows, for the memory benchmark of scripts/bench/parquet.sh:
//
//	go run ./scripts/bench/parquetgen -o big.parquet -size 2G
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/parquet-go/parquet-go"
)

func main() {
	out := flag.String("o", "big.parquet", "output file")
	size := flag.Int64("size", 2<<30, "stop once the file is this many bytes")
	flag.Parse()
	if err := write(*out, *size); err != nil {
		fmt.Fprintln(os.Stderr, "parquetgen:", err)
		os.Exit(1)
	}
}

// turn is one message of a conversation; its fields may be null.
type turn struct {
	From  *string `parquet:"from,optional"`
	Value *string `parquet:"value,optional"`
}

// row is one conversation.
type row struct {
	ID            string `parquet:"id"`
	Conversations []turn `parquet:"conversations,list,optional"`
}

func write(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := parquet.NewGenericWriter[row](f, parquet.Compression(&parquet.Snappy), parquet.MaxRowsPerRowGroup(20000))
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("the a model token answer question sort list reverse python function return value error file line record budget server batch cache queue")
	for first := 0; ; first += 1000 {
		if fi, err := f.Stat(); err == nil && fi.Size() >= size {
			break
		}
		// The file grows a row group at a time: it may pass size by up to one.
		if _, err := w.Write(batch(rng, words, first, 1000)); err != nil {
			return err
		}
	}
	return w.Close()
}

// batch builds n rows of three-turn conversations of random words.
func batch(rng *rand.Rand, words []string, first, n int) []row {
	rows := make([]row, n)
	for i := range rows {
		rows[i].ID = fmt.Sprintf("big-%d", first+i)
		for t, from := range []string{"human", "gpt", "human"} {
			var sb strings.Builder
			for k := 0; k < 100+rng.IntN(200)*(t%2+1); k++ {
				sb.WriteString(words[rng.IntN(len(words))])
				sb.WriteByte(' ')
			}
			from, value := from, sb.String()
			rows[i].Conversations = append(rows[i].Conversations, turn{From: &from, Value: &value})
		}
	}
	return rows
}
