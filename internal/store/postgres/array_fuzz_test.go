//go:build !nopostgres

package postgres

import (
	"encoding/binary"
	"slices"
	"testing"
)

// encodeArray writes vals as PostgreSQL's binary array of 8-byte
// integers (array_send): the reference the decoder is checked against.
func encodeArray(vals []int64) []byte {
	b := binary.BigEndian.AppendUint32(nil, 1) // ndim
	b = binary.BigEndian.AppendUint32(b, 0)    // no NULLs
	b = binary.BigEndian.AppendUint32(b, 20)   // int8's oid
	b = binary.BigEndian.AppendUint32(b, uint32(len(vals)))
	b = binary.BigEndian.AppendUint32(b, 1) // lower bound
	for _, v := range vals {
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// FuzzArrays: the decoders of binary arrays never panic, whatever the
// bytes, and give back what array_send wrote.
func FuzzArrays(f *testing.F) {
	f.Add(encodeArray([]int64{1, -2, 1 << 40}), int64(7))
	f.Add(encodeArray(nil), int64(0))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20}, int64(1))
	f.Fuzz(func(t *testing.T, b []byte, v int64) {
		int64s(b, nil)
		int32s(b, nil)
		int16s(b, nil)
		var d decoder
		d.texts(b, nil, []string{"x"})
		vals := []int64{v, -v, 0, v / 3}
		got, err := int64s(encodeArray(vals), nil)
		if err != nil || !slices.Equal(got, vals) {
			t.Fatalf("int64s(encodeArray(%v)) = %v, %v", vals, got, err)
		}
	})
}
