package chat

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/synthpipe/synthpipe/lib/bundle"
	"github.com/synthpipe/synthpipe/lib/chattemplate"
	"github.com/synthpipe/synthpipe/lib/exitcode"
	"github.com/synthpipe/synthpipe/lib/thinking"
	"github.com/synthpipe/synthpipe/lib/tokenizer"
)

// BuiltinPrefix marks a --tokenizer bundled in the binary: builtin:kimi-k2.5.
const BuiltinPrefix = "builtin:"

// loads keeps one load per tokenizer path: a Tokenizer is immutable, and a
// large tokenizer.json takes a second or more to read, which tests that run
// a tool many times in one process would pay again and again.
var loads sync.Map // path -> func() (*tokenizer.Tokenizer, error)

// LoadTokenizer loads --tokenizer: a model folder, a tokenizer file, or a
// bundled one (builtin:NAME). A missing path is exit 66; a file that is not a
// tokenizer synthpipe can read is exit 65.
func LoadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	if path == "" {
		return nil, exitcode.Usagef("--tokenizer is required: a model folder, a tokenizer file, or %s%s", BuiltinPrefix, bundle.TokenizerName)
	}
	once, _ := loads.LoadOrStore(path, sync.OnceValues(func() (*tokenizer.Tokenizer, error) { return load(path) }))
	return once.(func() (*tokenizer.Tokenizer, error))()
}

func load(path string) (*tokenizer.Tokenizer, error) {
	if name, ok := strings.CutPrefix(path, BuiltinPrefix); ok {
		return loadBuiltin(name)
	}
	tok, err := tokenizer.Load(path)
	if noFile := (*tokenizer.NoTokenizerFileError)(nil); errors.As(err, &noFile) {
		tok, err = loadCompressedFolder(path, err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, exitcode.NoInputf("--tokenizer %s: %v", path, err)
	}
	if err != nil {
		return nil, exitcode.DataErrorf("--tokenizer %s: %v", path, err)
	}
	return tok, nil
}

// loadCompressedFolder loads a model folder whose tokenizer files are
// zstd-compressed (tiktoken.model.zst, tokenizer.json.zst: the layout of the
// bundled tokenizer in lib/bundle, and a common way to keep model folders
// small) by unpacking it into a temporary folder. A folder without those
// either is refused with notFound, plus the name of the bundled tokenizer.
func loadCompressedFolder(dir string, notFound error) (*tokenizer.Tokenizer, error) {
	compressed, _ := filepath.Glob(filepath.Join(dir, "*.zst"))
	if len(compressed) == 0 {
		return nil, fmt.Errorf("%w (the Kimi-K2.5 tokenizer bundled in the binary is --tokenizer %s%s)",
			notFound, BuiltinPrefix, bundle.TokenizerName)
	}
	tmp, err := os.MkdirTemp("", "synthpipe-tokenizer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := bundle.UnpackDir(os.DirFS(dir), tmp); err != nil {
		return nil, err
	}
	return tokenizer.Load(tmp)
}

// loadBuiltin unpacks a bundled tokenizer into a temporary folder just long
// enough to load it.
func loadBuiltin(name string) (*tokenizer.Tokenizer, error) {
	if name != bundle.TokenizerName {
		return nil, exitcode.Usagef("--tokenizer %s%s: no such bundled tokenizer (there is %s%s)", BuiltinPrefix, name, BuiltinPrefix, bundle.TokenizerName)
	}
	tmp, err := os.MkdirTemp("", "synthpipe-tokenizer-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	dir, err := bundle.ExtractTokenizer(tmp)
	if err != nil {
		return nil, err
	}
	return tokenizer.Load(dir)
}

// LoadTemplate parses the chat template that --template names: "none" (nil),
// "auto" (fromTokenizer, the tokenizer folder's own template) or a file. Its
// tool declaration is auto: TypeScript for templates that read tools_ts_str.
func LoadTemplate(name, tokenizerPath, fromTokenizer string) (*Template, error) {
	var src string
	switch name {
	case TemplateNone:
		return nil, nil
	case TemplateAuto, "":
		if fromTokenizer == "" {
			return nil, exitcode.Usagef("the tokenizer %s has no chat template: pass --template FILE (or --template none for rendered text records)", tokenizerPath)
		}
		name, src = tokenizerPath+"/chat_template", fromTokenizer
	default:
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, exitcode.NoInputf("--template: %v", err)
		}
		src = string(b)
	}
	t, err := chattemplate.Parse(name, src)
	if err != nil {
		return nil, exitcode.DataErrorf("chat template: %v", err)
	}
	tpl := &Template{Template: t, readsDeclaration: readsDeclaration.MatchString(src), ThinkingSwitch: thinking.SwitchIn(src)}
	tpl.TypeScript = tpl.readsDeclaration
	return tpl, nil
}
