package record_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/synthpipe/synthpipe/lib/answerformat/turnstest"
	"github.com/synthpipe/synthpipe/lib/kimitools/kimitest"
	"github.com/synthpipe/synthpipe/lib/record"
)

// TestFieldTags ties the struct tags that name record fields (a tag cannot
// name a constant) to the constants of fields.go.
func TestFieldTags(t *testing.T) {
	for _, tc := range []struct {
		typ    any
		fields map[string]string // Go field: record field
	}{
		{kimitest.Record{}, map[string]string{"ID": record.FieldID, "Messages": record.FieldMessages, "Tools": record.FieldTools}},
		{turnstest.Conversation{}, map[string]string{"ID": record.FieldID, "Tools": record.FieldTools}},
	} {
		typ := reflect.TypeOf(tc.typ)
		for name, want := range tc.fields {
			f, ok := typ.FieldByName(name)
			if !ok {
				t.Errorf("%v has no field %s", typ, name)
				continue
			}
			if got, _, _ := strings.Cut(f.Tag.Get("json"), ","); got != want {
				t.Errorf("%v.%s: json tag %q, want %q", typ, name, got, want)
			}
		}
	}
}
