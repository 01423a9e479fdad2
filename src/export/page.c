/*
 * page.c - see page.h.
 */
#include "page.h"
#include "export/web/web.h"

#include <string.h>

int mt_page_slot_is(const struct mt_page_slot *slot, const char *name)
{
	return slot->name_len == strlen(name) && !memcmp(slot->name, name, slot->name_len);
}

int mt_page_slot_arg(const struct mt_page_slot *slot, size_t *pos, const char **name, size_t *len)
{
	size_t i = *pos, n = slot->args_len;
	const char *a = slot->args;
	while (i < n && a[i] == ' ')
		i++;
	size_t j = i;
	while (j < n && a[j] != ' ')
		j++;
	*pos = j;
	if (j == i)
		return 0;
	*name = a + i;
	*len = j - i;
	return 1;
}

int mt_page_write(FILE *f, mt_page_fill fill, void *ctx, char *err, size_t errlen)
{
	const struct mt_web_asset *page = mt_web_asset("report.html");
	if (!page) {
		snprintf(err, errlen, "report.html was not built in");
		return -1;
	}
	const char *s = (const char *)page->data, *end = s + page->len;
	while (s < end) {
		const char *open = strstr(s, "{{");
		const char *close = open ? strstr(open, "}}") : NULL;
		if (!close) {
			fwrite(s, 1, (size_t)(end - s), f);
			break;
		}
		fwrite(s, 1, (size_t)(open - s), f);
		size_t len = (size_t)(close - open - 2), n = 0;
		const char *text = open + 2;
		while (n < len && text[n] != ' ')
			n++;
		struct mt_page_slot slot = {
			.name = text, .name_len = n, .args = text + n, .args_len = len - n
		};
		if (fill(ctx, f, &slot, err, errlen) < 0)
			return -1;
		s = close + 2;
	}
	return 0;
}
