// Package tlv reads and writes type-length-value records: one byte of type, one byte of
// length, then that many bytes of value.
package tlv

import "errors"

// Record is one decoded record.
type Record struct {
	Type  byte
	Value []byte
}

// ErrTruncated is returned when the input ends inside a record.
var ErrTruncated = errors.New("tlv: truncated record")

// Decode reads every record of b.
func Decode(b []byte) ([]Record, error) {
	var records []Record
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, ErrTruncated
		}
		n := int(b[1])
		records = append(records, Record{Type: b[0], Value: b[2 : 2+n]})
		b = b[2+n:]
	}
	return records, nil
}

// Encode writes records as Decode reads them; a value is at most 255 bytes.
func Encode(records []Record) []byte {
	var out []byte
	for _, r := range records {
		out = append(out, r.Type, byte(len(r.Value)))
		out = append(out, r.Value...)
	}
	return out
}
