package cli

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
)

const testTemplate = "../serve/testdata/templates/qwen2.5.jinja"

// runChat runs poot chat in-process on the given input lines, with
// interrupts from sigs.
func runChat(t *testing.T, input string, stdout io.Writer, sigs chan os.Signal, args ...string) (string, int) {
	t.Helper()
	oldIn, oldSig := stdin, chatInterrupts
	stdin = strings.NewReader(input)
	chatInterrupts = func() (<-chan os.Signal, func()) { return sigs, func() {} }
	defer func() { stdin, chatInterrupts = oldIn, oldSig }()
	var errOut bytes.Buffer
	status := run(append([]string{"chat", "-m", tinyModel, "--chat-template", testTemplate, "--ctx", "256", "--temp", "0"}, args...), stdout, &errOut)
	return errOut.String(), status
}

func TestChatResetAndExit(t *testing.T) {
	var out bytes.Buffer
	errOut, status := runChat(t, "hello\n/reset\nhello\nmore\n/exit\nnever read\n", &out, make(chan os.Signal), "-n", "6")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	replies := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(replies) != 3 {
		t.Fatalf("%d replies %q, want 3", len(replies), replies)
	}
	// After /reset, the same line gets the same greedy reply.
	if replies[0] != replies[1] || replies[0] == "" {
		t.Errorf("replies before and after /reset: %q, %q", replies[0], replies[1])
	}
	if !strings.Contains(errOut, "(conversation forgotten)") {
		t.Errorf("stderr %q", errOut)
	}
}

// interruptingWriter sends an interrupt on its first write and returns
// only once the chat has acted on it: sigs is unbuffered and the chat
// handles one signal at a time, so the second send completes after the
// first was handled. (With one send, the reply could end before the
// handler ran, and the test failed now and then.)
type interruptingWriter struct {
	bytes.Buffer
	sigs chan os.Signal
	once sync.Once
	mu   sync.Mutex
}

func (w *interruptingWriter) Write(p []byte) (int, error) {
	w.once.Do(func() {
		w.sigs <- os.Interrupt
		w.sigs <- os.Interrupt
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.Buffer.Write(p)
}

// Ctrl-C stops a reply and the chat goes on.
func TestChatInterrupt(t *testing.T) {
	sigs := make(chan os.Signal)
	w := &interruptingWriter{sigs: sigs}
	errOut, status := runChat(t, "tell me everything\n/exit\n", w, sigs, "-n", "0")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	if !strings.Contains(errOut, "(reply stopped)") {
		t.Errorf("stderr %q, want the reply stopped", errOut)
	}
}

func TestChatNoTemplate(t *testing.T) {
	oldIn := stdin
	stdin = strings.NewReader("hi\n")
	defer func() { stdin = oldIn }()
	_, stderr, status := runPoot("chat", "-m", tinyModel)
	oneLineError(t, stderr, status, "no chat template")
}
