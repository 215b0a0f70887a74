/* rle: a tiny run-length encoding format.
 *
 * A stream is:
 *   "RLE1"                 4-byte magic
 *   u32, little-endian     size of the decoded data
 *   records, to the end of the input:
 *     op 0x00..0x7f        literal run: the next (op + 1) bytes are copied as they are
 *     op 0x80..0xff        repeat run: the next byte is repeated (op - 0x80 + 3) times
 */
#ifndef RLE_H
#define RLE_H

#include <stddef.h>

#define RLE_MAGIC "RLE1"
#define RLE_HEADER_SIZE 8
#define RLE_MAX_SIZE (64u << 20) /* refuse to allocate more than 64 MiB for one stream */
#define RLE_MAX_LITERAL 128
#define RLE_MIN_REPEAT 3
#define RLE_MAX_REPEAT (0x7f + RLE_MIN_REPEAT)

enum rle_status {
	RLE_OK = 0,
	RLE_ERR_MAGIC,     /* not an RLE1 stream */
	RLE_ERR_TRUNCATED, /* the header is cut short */
	RLE_ERR_TOO_BIG,   /* the declared size exceeds RLE_MAX_SIZE */
	RLE_ERR_SIZE,      /* the runs do not add up to the declared size */
	RLE_ERR_NOMEM,
};

/* Both allocate *out (free it with free()) only when they return RLE_OK. */
int rle_encode(const unsigned char *in, size_t len, unsigned char **out, size_t *out_len);
int rle_decode(const unsigned char *in, size_t len, unsigned char **out, size_t *out_len);
const char *rle_strerror(int status);

#endif
