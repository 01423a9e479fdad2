/*
 * test_markup.c - unit test of base/markup.c, the one escaper of text put
 * into XML and HTML (the SVG and HTML exports, the server's error page):
 * every character markup gives a meaning to comes out as an entity,
 * control characters as spaces, malformed UTF-8 as U+FFFD, and a length
 * limit counts characters, not bytes.
 */
#include "base/markup.h"
#include "../check.h"

#include <stdlib.h>
#include <string.h>

static char *markup(const char *s, long maxch)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	mt_markup_str(f, s, maxch);
	fclose(f);
	return out;
}

static void expect(const char *s, long maxch, const char *want)
{
	char *got = markup(s, maxch);
	if (strcmp(got, want) != 0) {
		fprintf(stderr, "markup of \"%s\" (%ld): \"%s\", expected \"%s\"\n", s, maxch, got,
			want);
		failures++;
	}
	free(got);
}

int main(void)
{
	expect("std::vector<int>::operator=", -1, "std::vector&lt;int&gt;::operator=");
	expect("a & b \"c\" 'd'", -1, "a &amp; b &quot;c&quot; &apos;d&apos;");
	expect("</script><!--", -1, "&lt;/script&gt;&lt;!--");
	expect("tab\there\nnl\x7f\x1b[2J", -1, "tab here nl  [2J");
	expect("bad \xff\xc0\xaf end", -1, "bad \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end");
	expect("caf\xc3\xa9 \xe2\x82\xac", -1, "caf\xc3\xa9 \xe2\x82\xac"); /* kept as they are */
	expect("caf\xc3\xa9 \xe2\x82\xac", 4, "caf\xc3\xa9");		    /* 4 characters */
	expect("<<<<", 2, "&lt;&lt;");
	expect("", -1, "");
	expect("abc", 0, "");
	return failures ? 1 : 0;
}
