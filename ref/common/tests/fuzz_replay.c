/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_replay: runs a fuzz target's LLVMFuzzerTestOneInput over every file in
 * fixtures/fuzz/<target>/seeds and .../regress (target = this program's name without
 * "replay_"), so a plain gcc build replays the corpus and every crasher found. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pd_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_dir(const char *dir, int *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	if (!d)
		return 0; /* no such corpus: nothing to replay */
	while ((e = readdir(d))) {
		char path[1024];
		char *buf;
		size_t len;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (pd_read_file(path, 1 << 24, &buf, &len))
			continue;
		LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
		free(buf);
		(*n)++;
	}
	closedir(d);
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/');
	char dir[512];
	int n = 0;
	(void)argc;
	name = name ? name + 1 : argv[0];
	if (!strncmp(name, "replay_", 7))
		name += 7;
	snprintf(dir, sizeof(dir), "fixtures/fuzz/%s/seeds", name);
	replay_dir(dir, &n);
	snprintf(dir, sizeof(dir), "fixtures/fuzz/%s/regress", name);
	replay_dir(dir, &n);
	printf("%s: %d input(s) replayed\n", name, n);
	return n > 0 ? 0 : 77;
}
