package tlv

import (
	"bytes"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	in := []Record{{Type: 1, Value: []byte("hello")}, {Type: 2, Value: nil}}
	out, err := Decode(Encode(in))
	if err != nil || len(out) != 2 || !bytes.Equal(out[0].Value, []byte("hello")) {
		t.Fatalf("Decode(Encode(%v)) = %v, %v", in, out, err)
	}
}

func TestEmpty(t *testing.T) {
	if out, err := Decode(nil); err != nil || len(out) != 0 {
		t.Fatalf("Decode(nil) = %v, %v", out, err)
	}
}

func TestLoneTypeByte(t *testing.T) {
	if _, err := Decode([]byte{7}); err != ErrTruncated {
		t.Fatalf("Decode([7]) = %v, want ErrTruncated", err)
	}
}
