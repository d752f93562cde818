package jsonl

import "strconv"

// AppendIntArray appends ids to dst as a JSON array: token ids are written
// this way by generate (output_ids) and to-train (input_ids), and both must
// agree byte for byte with what tokenize-prompts wrote.
func AppendIntArray(dst []byte, ids []int) []byte {
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(id), 10)
	}
	return append(dst, ']')
}
