/* rle: command-line front end.
 *
 *   rle encode FILE    write the encoded FILE to stdout
 *   rle decode FILE    write the decoded FILE to stdout
 *
 * Exit status: 0 success, 1 usage or I/O error, 2 corrupt input.
 */
#include "rle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Read the whole file into a buffer of exactly its size, so that AddressSanitizer flags
 * any read past the end of the input. */
static int read_file(const char *path, unsigned char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	long size;
	unsigned char *buf;

	if (!f)
		return -1;
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return -1;
	}
	buf = malloc(size ? (size_t)size : 1);
	if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	*data = buf;
	*len = (size_t)size;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned char *in, *out;
	size_t in_len, out_len;
	int status;

	if (argc != 3 || (strcmp(argv[1], "encode") != 0 && strcmp(argv[1], "decode") != 0)) {
		fprintf(stderr, "usage: rle encode|decode FILE\n");
		return 1;
	}
	if (read_file(argv[2], &in, &in_len) != 0) {
		fprintf(stderr, "rle: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	if (argv[1][0] == 'e')
		status = rle_encode(in, in_len, &out, &out_len);
	else
		status = rle_decode(in, in_len, &out, &out_len);
	free(in);
	if (status != RLE_OK) {
		fprintf(stderr, "rle: %s: %s\n", argv[1][0] == 'e' ? "cannot encode" : "corrupt input",
			rle_strerror(status));
		return 2;
	}
	status = fwrite(out, 1, out_len, stdout) == out_len && fflush(stdout) == 0 ? 0 : 1;
	if (status)
		fprintf(stderr, "rle: write error\n");
	free(out);
	return status;
}
