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

// Split finds the same frames as Reader in a stream cut anywhere: nothing until a frame is
// whole, then the frame and the bytes it used; a corrupt header is an error.
func TestSplitAgreesWithReaderAtEveryCut(t *testing.T) {
	var stream []byte
	msgs := [][]byte{[]byte("first"), {}, bytes.Repeat([]byte{3}, 300)}
	for i, m := range msgs {
		bp, err := Frame(transport.Channel(i%2), m)
		if err != nil {
			t.Fatal(err)
		}
		stream = append(stream, *bp...)
		Release(bp)
	}
	for cut := range len(stream) + 1 {
		var got [][]byte
		pending := append([]byte(nil), stream[:cut]...)
		feed := func() {
			for {
				ch, msg, used, err := Split(pending)
				if err != nil {
					t.Fatalf("cut %d: %v", cut, err)
				}
				if used == 0 {
					return
				}
				if want := transport.Channel(len(got) % 2); ch != want {
					t.Fatalf("cut %d: frame %d on channel %v, want %v", cut, len(got), ch, want)
				}
				got = append(got, append([]byte(nil), msg...))
				pending = pending[used:]
			}
		}
		feed()
		pending = append(pending, stream[cut:]...)
		feed()
		if len(got) != len(msgs) || len(pending) != 0 {
			t.Fatalf("cut %d: %d frames, %d bytes left", cut, len(got), len(pending))
		}
		for i := range msgs {
			if !bytes.Equal(got[i], msgs[i]) {
				t.Fatalf("cut %d: frame %d differs", cut, i)
			}
		}
	}
	if _, _, _, err := Split([]byte{0, 0, 0, 1, 9, 'x'}); err == nil {
		t.Fatal("channel byte 9 accepted")
	}
}
