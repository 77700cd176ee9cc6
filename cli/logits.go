package cli

import (
	"bufio"
	"io"
	"math"
	"strconv"

	"github.com/pootlabs/poot/driver"
)

// cmdLogits prints {"tokens":[...],"logits":[[...],...]}: one row per
// position with --all, else the last position's only. Token ids are used as
// given (no BOS is added). Floats are the shortest decimal that reads back
// as the same float32; non-finite values are null. This output is a
// contract for outside tests: keep it stable.
func cmdLogits(args []string, stdout, stderr io.Writer) error {
	fs := flags("logits", "logits -m MODEL (--tokens 1,2,3 | -p TEXT | -f FILE) [--all] [--interp NAME] [--threads N]", stdout)
	var model, interpName, tokens string
	var capacity int
	kv := modelFlags(fs, &model, &interpName, &capacity)
	fs.StringVar(&tokens, "tokens", "", "comma-separated token ids, used as given")
	ps := promptFlags(fs, "a text to score instead of --tokens, tokenized as generate does (BOS included)")
	all := fs.Bool("all", false, "print the logits of every position, not only the last")
	threads := threadsFlag(fs)
	if err := fs.parse(args); err != nil {
		return err
	}
	prompt, given, err := ps.read(fs)
	if err != nil {
		return err
	}
	var ids []int32
	switch {
	case given && tokens != "":
		return usagef("give --tokens or a text (-p, -f), not both")
	case !given:
		if ids, err = parseTokens(tokens); err != nil {
			return err
		}
	}
	restore, err := setThreads(*threads)
	if err != nil {
		return err
	}
	defer restore()
	s, err := openSession(model, interpName, capacity, kv, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	if given {
		if ids, err = s.Encode(prompt, driver.GenerateOptions{}); err != nil {
			return err
		}
	}
	if err := s.CheckTokens(ids); err != nil {
		return err
	}
	rows, err := s.Logits(ids, *all)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(stdout, 1<<16)
	w.WriteString(`{"tokens":[`)
	w.WriteString(joinTokens(ids))
	w.WriteString(`],"logits":[`)
	var buf []byte
	for i, row := range rows {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteByte('[')
		for j, x := range row {
			if j > 0 {
				w.WriteByte(',')
			}
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				w.WriteString("null")
				continue
			}
			buf = strconv.AppendFloat(buf[:0], float64(x), 'g', -1, 32)
			w.Write(buf)
		}
		w.WriteByte(']')
	}
	w.WriteString("]}\n")
	return w.Flush()
}
