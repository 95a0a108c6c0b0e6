package framing

import (
	"bytes"
	"testing"

	"netstick/prototypes/reference/internal/transport"
)

func TestFrameRoundTrip(t *testing.T) {
	var stream bytes.Buffer
	msgs := [][]byte{{}, []byte("a"), bytes.Repeat([]byte{7}, 70000)}
	for i, m := range msgs {
		bp, err := Frame(transport.Channel(i%2), m)
		if err != nil {
			t.Fatal(err)
		}
		stream.Write(*bp)
		Release(bp)
	}
	r := NewReader(&stream)
	for i, want := range msgs {
		ch, got, err := r.Next()
		if err != nil || ch != transport.Channel(i%2) || !bytes.Equal(got, want) {
			t.Fatalf("frame %d: ch %v, %d B, err %v", i, ch, len(got), err)
		}
	}
}

// FuzzReader: a hostile byte stream never panics the reader or makes it allocate more
// than MaxMessageBytes; it ends in an error or a sequence of valid frames.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 'x'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add([]byte{0, 0, 0, 0, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		for range 1000 {
			ch, msg, err := r.Next()
			if err != nil {
				return
			}
			if ch != transport.Reliable && ch != transport.Unreliable {
				t.Fatalf("invalid channel %d accepted", ch)
			}
			if len(msg) > MaxMessageBytes {
				t.Fatalf("%d B message accepted", len(msg))
			}
		}
	})
}
