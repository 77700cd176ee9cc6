package cli

import (
	"fmt"
	"io"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/tokenizer"
)

// openTokenizer loads only a checkpoint's vocabulary (no graph is traced).
func openTokenizer(path string) (*tokenizer.Tokenizer, func(), error) {
	if path == "" {
		return nil, nil, usagef("no model: give -m MODEL (a GGUF file or a safetensors directory)")
	}
	return driver.OpenTokenizer(path)
}

// cmdTokenize prints a text's token ids comma-separated on one line, or with
// --pieces one "id piece" pair a line.
func cmdTokenize(args []string, stdout, stderr io.Writer) error {
	fs := flags("tokenize", "tokenize -m MODEL (-p TEXT | -f FILE) [--no-bos] [--special] [--pieces]", stdout)
	var model string
	modelFlags(fs, &model, nil, nil)
	ps := promptFlags(fs, "the text")
	noBOS := fs.Bool("no-bos", false, "do not add the BOS token the model's metadata asks for")
	special := fs.Bool("special", false, "parse special-token text (\"<s>\") in the text")
	pieces := fs.Bool("pieces", false, "print one \"id piece\" pair a line")
	if err := fs.parse(args); err != nil {
		return err
	}
	text, _, err := ps.read(fs)
	if err != nil {
		return err
	}
	t, done, err := openTokenizer(model)
	if err != nil {
		return err
	}
	defer done()
	ids, err := t.Encode(text, tokenizer.EncodeOptions{AddBOS: t.AddBOS() && !*noBOS, ParseSpecial: *special})
	if err != nil {
		return err
	}
	if *pieces {
		for _, id := range ids {
			if _, err := fmt.Fprintf(stdout, "%d %s\n", id, t.Piece(id)); err != nil {
				return err
			}
		}
		return nil
	}
	_, err = fmt.Fprintln(stdout, joinTokens(ids))
	return err
}

// cmdDetokenize prints the text of token ids and a newline.
func cmdDetokenize(args []string, stdout, stderr io.Writer) error {
	fs := flags("detokenize", "detokenize -m MODEL --tokens 1,2,3", stdout)
	var model, tokens string
	modelFlags(fs, &model, nil, nil)
	fs.StringVar(&tokens, "tokens", "", "comma-separated token ids")
	if err := fs.parse(args); err != nil {
		return err
	}
	ids, err := parseTokens(tokens)
	if err != nil {
		return err
	}
	t, done, err := openTokenizer(model)
	if err != nil {
		return err
	}
	defer done()
	text, err := t.Decode(ids)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, text)
	return err
}
