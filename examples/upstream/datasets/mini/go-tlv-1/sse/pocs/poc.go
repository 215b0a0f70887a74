// A record whose length byte says 200 where 2 bytes follow: Decode slices past the input.
package main

import (
	"fmt"

	"example.com/tlv"
)

func main() {
	records, err := tlv.Decode([]byte{1, 200, 'h', 'i'})
	fmt.Println(len(records), err)
}
