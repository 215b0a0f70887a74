/* Unit tests for the rle library: round trips and the errors the decoder reports. */
#include "../rle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); \
			failures++;                                          \
		}                                                            \
	} while (0)

static void roundtrip(const unsigned char *data, size_t len)
{
	unsigned char *enc, *dec;
	size_t enc_len, dec_len;

	CHECK(rle_encode(data, len, &enc, &enc_len) == RLE_OK);
	CHECK(enc_len <= RLE_HEADER_SIZE + len + len / RLE_MAX_LITERAL + 1);
	CHECK(rle_decode(enc, enc_len, &dec, &dec_len) == RLE_OK);
	CHECK(dec_len == len && memcmp(dec, data, len) == 0);
	free(enc);
	free(dec);
}

static void test_roundtrips(void)
{
	static unsigned char buf[5000];
	size_t lens[] = {0, 1, 2, 3, 4, 129, 130, 131, 300, 5000};
	unsigned seed = 12345;
	size_t i, k;

	for (k = 0; k < sizeof lens / sizeof *lens; k++) {
		memset(buf, 'a', lens[k]); /* one long run */
		roundtrip(buf, lens[k]);
		for (i = 0; i < lens[k]; i++) /* no runs at all */
			buf[i] = (unsigned char)i;
		roundtrip(buf, lens[k]);
		for (i = 0; i < lens[k]; i++) { /* a mix of short and long runs */
			seed = seed * 1103515245 + 12345;
			buf[i] = (seed >> 16) % 7 < 5 && i ? buf[i - 1] : (unsigned char)(seed >> 8);
		}
		roundtrip(buf, lens[k]);
	}
}

/* Decode a hand-written stream and compare with the expected result. The stream is copied
 * into a buffer of exactly its length so that AddressSanitizer sees any read past its end. */
static void decodes_to(const char *stream, size_t len, int want_status, const char *want)
{
	unsigned char *in = malloc(len ? len : 1), *out = NULL;
	size_t out_len = 0;
	int status;

	memcpy(in, stream, len);
	status = rle_decode(in, len, &out, &out_len);
	free(in);

	CHECK(status == want_status);
	if (status == RLE_OK && want_status == RLE_OK) {
		CHECK(out_len == strlen(want) && memcmp(out, want, out_len) == 0);
		free(out);
	}
}

/* A stream literal and its length, without the terminating NUL. */
#define STREAM(s) s, sizeof(s) - 1

static void test_decode(void)
{
	/* "ab" as a literal run, then 'c' repeated 5 times */
	decodes_to(STREAM("RLE1\x07\0\0\0\x01" "ab\x82" "c"), RLE_OK, "abccccc");
	decodes_to(STREAM("RLE1\0\0\0\0"), RLE_OK, "");
	decodes_to(STREAM("RLE2\0\0\0\0"), RLE_ERR_MAGIC, NULL);
	decodes_to(STREAM("RLE1\0\0"), RLE_ERR_TRUNCATED, NULL);
	decodes_to(STREAM("RLE1\xff\xff\xff\xff"), RLE_ERR_TOO_BIG, NULL);
	/* the runs stop short of the declared size */
	decodes_to(STREAM("RLE1\x09\0\0\0\x01" "ab\x82" "c"), RLE_ERR_SIZE, NULL);
}

int main(void)
{
	test_roundtrips();
	test_decode();
	if (failures) {
		fprintf(stderr, "test_rle: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_rle: all tests passed\n");
	return 0;
}
