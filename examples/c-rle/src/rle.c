#include "rle.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint32_t read_u32le(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void write_u32le(unsigned char *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8 & 0xff;
	p[2] = v >> 16 & 0xff;
	p[3] = v >> 24 & 0xff;
}

/* Emit n pending literal bytes as runs of at most RLE_MAX_LITERAL; returns the new offset. */
static size_t put_literals(unsigned char *buf, size_t o, const unsigned char *p, size_t n)
{
	while (n > 0) {
		size_t chunk = n > RLE_MAX_LITERAL ? RLE_MAX_LITERAL : n;

		buf[o++] = (unsigned char)(chunk - 1);
		memcpy(buf + o, p, chunk);
		o += chunk;
		p += chunk;
		n -= chunk;
	}
	return o;
}

int rle_encode(const unsigned char *in, size_t len, unsigned char **out, size_t *out_len)
{
	/* Worst case is all literals: one op byte per RLE_MAX_LITERAL bytes, and a repeat run
	 * (2 bytes for at least 3) never costs more than the literals it replaces. */
	size_t cap = RLE_HEADER_SIZE + len + len / RLE_MAX_LITERAL + 1;
	size_t i = 0, lit = 0, o = RLE_HEADER_SIZE;
	unsigned char *buf;

	if (len > RLE_MAX_SIZE)
		return RLE_ERR_TOO_BIG;
	buf = malloc(cap);
	if (!buf)
		return RLE_ERR_NOMEM;
	memcpy(buf, RLE_MAGIC, 4);
	write_u32le(buf + 4, (uint32_t)len);

	while (i < len) {
		size_t run = 1;

		while (i + run < len && run < RLE_MAX_REPEAT && in[i + run] == in[i])
			run++;
		if (run >= RLE_MIN_REPEAT) {
			o = put_literals(buf, o, in + lit, i - lit);
			buf[o++] = (unsigned char)(0x80 + run - RLE_MIN_REPEAT);
			buf[o++] = in[i];
			lit = i + run;
		}
		i += run; /* a shorter run stays in the pending literals */
	}
	o = put_literals(buf, o, in + lit, len - lit);

	*out = buf;
	*out_len = o;
	return RLE_OK;
}

int rle_decode(const unsigned char *in, size_t len, unsigned char **out, size_t *out_len)
{
	size_t size, pos = RLE_HEADER_SIZE, n = 0;
	unsigned char *buf;

	if (len < RLE_HEADER_SIZE)
		return RLE_ERR_TRUNCATED;
	if (memcmp(in, RLE_MAGIC, 4) != 0)
		return RLE_ERR_MAGIC;
	size = read_u32le(in + 4);
	if (size > RLE_MAX_SIZE)
		return RLE_ERR_TOO_BIG;
	buf = malloc(size ? size : 1);
	if (!buf)
		return RLE_ERR_NOMEM;

	while (pos < len) {
		unsigned op = in[pos++];
		size_t count;

		if (op < 0x80) {
			count = op + 1;
			memcpy(buf + n, in + pos, count);
			pos += count;
		} else {
			count = op - 0x80 + RLE_MIN_REPEAT;
			memset(buf + n, in[pos], count);
			pos += 1;
		}
		n += count;
	}
	if (n != size) {
		free(buf);
		return RLE_ERR_SIZE;
	}

	*out = buf;
	*out_len = n;
	return RLE_OK;
}

const char *rle_strerror(int status)
{
	switch (status) {
	case RLE_OK: return "success";
	case RLE_ERR_MAGIC: return "bad magic";
	case RLE_ERR_TRUNCATED: return "truncated input";
	case RLE_ERR_TOO_BIG: return "declared size too big";
	case RLE_ERR_SIZE: return "decoded size does not match the header";
	case RLE_ERR_NOMEM: return "out of memory";
	}
	return "unknown error";
}
