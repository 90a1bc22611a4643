#!/usr/bin/env python3
"""Write the text half of the seed paper's web page (§9.1: HTML 15 KB, CSS 5.8 KB, two 30 KB JPEGs).

    python3 tools/make_site.py SITE_DIR

Writes SITE_DIR/index.html (exactly HTML_BYTES bytes) and SITE_DIR/style.css (exactly CSS_BYTES
bytes), ASCII, byte-for-byte the same on every run (no randomness, no dates). The HTML references
the stylesheet and the two images (img1.jpg, img2.jpg, made by ffmpeg in make_samples.sh) and
nothing else, so a client that fetches page requisites (wget -p) asks for exactly four objects.
"""

import os
import sys

HTML_BYTES = 15000   # seed paper §9.1: "15, 5.8, 30, and 30 KB" (KB read as 1000 bytes)
CSS_BYTES = 5800

WORDS = (
    "buffer queue packet delay loss router link access backbone capacity window congestion "
    "flow sender receiver latency jitter throughput bottleneck drop retransmission timeout "
    "page object request response server client browser user quality experience score "
    "network traffic upload download bulk transfer round trip time measure testbed cable "
    "modem downstream upstream queueing sizing bufferbloat interactive voice video web"
).split()


def text(n_words, seed):
    """n_words words from WORDS, chosen by a fixed linear congruential sequence, as sentences."""
    out, x, sentence = [], seed, []
    for i in range(n_words):
        x = (1103515245 * x + 12345) % 2**31
        w = WORDS[(x >> 8) % len(WORDS)]
        sentence.append(w.capitalize() if not sentence else w)
        if len(sentence) >= 8 + (x >> 4) % 9 or i == n_words - 1:
            out.append(" ".join(sentence) + ".")
            sentence = []
    return " ".join(out)


def fit(head, body_parts, tail, size, pad_seed):
    """head + body + tail padded with one more paragraph's words, then cut to exactly size bytes."""
    doc = head + "".join(body_parts)
    room = size - len(doc) - len(tail)
    if room < 16:
        sys.exit(f"content already {len(doc) + len(tail)} bytes, over {size}")
    filler = text(room // 4 + 8, pad_seed)[: room - 2].rstrip() + "."
    filler = filler.ljust(room - 1) + "\n"
    doc = doc + filler + tail
    assert len(doc.encode("ascii")) == size, len(doc)
    return doc


def html():
    head = (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<title>Sizing network buffers: a page load</title>\n"
        "<link rel=\"stylesheet\" href=\"style.css\">\n</head>\n<body>\n"
        "<header><h1>Sizing network buffers</h1><p class=\"lead\">A static page of four objects: "
        "this document, a stylesheet and two images.</p></header>\n<main>\n"
    )
    parts = []
    for i in range(1, 7):
        parts.append(f"<section id=\"s{i}\">\n<h2>Section {i}</h2>\n")
        for j in range(3):
            parts.append(f"<p>{text(60 + 7 * j, 1000 * i + j)}</p>\n")
        if i == 1:
            parts.append("<figure><img src=\"img1.jpg\" width=\"480\" height=\"360\" alt=\"Figure 1\">"
                         "<figcaption>Figure 1.</figcaption></figure>\n")
        if i == 3:
            parts.append("<figure><img src=\"img2.jpg\" width=\"640\" height=\"480\" alt=\"Figure 2\">"
                         "<figcaption>Figure 2.</figcaption></figure>\n")
        parts.append("</section>\n")
    parts.append("<p class=\"note\">")
    tail = "</p>\n</main>\n<footer><p>qoe sample page</p></footer>\n</body>\n</html>\n"
    return fit(head, parts, tail, HTML_BYTES, 99)


def css():
    head = "/* qoe sample page stylesheet */\n"
    parts = [
        "html { font-family: Georgia, serif; font-size: 100%; line-height: 1.5; }\n",
        "body { margin: 0 auto; max-width: 46em; padding: 1em 2em; color: #222; background: #fdfdfb; }\n",
        "header, footer { border-bottom: 1px solid #ccc; margin-bottom: 1.5em; }\n",
        "footer { border-top: 1px solid #ccc; border-bottom: none; font-size: 0.8em; }\n",
        "h1 { font-size: 2.2em; margin: 0.5em 0 0.2em; }\n",
        "h2 { font-size: 1.4em; margin-top: 2em; color: #345; }\n",
        "p.lead { font-size: 1.15em; color: #555; }\n",
        "figure { margin: 1.5em 0; text-align: center; }\n",
        "figure img { max-width: 100%; height: auto; border: 1px solid #bbb; }\n",
        "figcaption { font-size: 0.85em; color: #666; }\n",
        "p.note { font-size: 0.8em; color: #777; }\n",
    ]
    # per-section rules (ordinary selectors, no url(): the stylesheet pulls in nothing)
    for i in range(1, 7):
        parts.append(f"#s{i} h2::before {{ content: \"{i}. \"; color: #89a; }}\n")
        parts.append(f"#s{i} p:first-of-type {{ text-indent: 0; margin-top: 0.{i}em; }}\n")
    for k in range(40):
        parts.append(f".c{k} {{ margin: {k % 4}px {k % 7}px; padding: {k % 5}px; "
                     f"color: #{(37 * k) % 256:02x}{(91 * k) % 256:02x}{(53 * k) % 256:02x}; }}\n")
    parts.append("/* ")
    return fit(head, parts, " */\n", CSS_BYTES, 7)


def main():
    site = sys.argv[1]
    os.makedirs(site, exist_ok=True)
    for name, content in (("index.html", html()), ("style.css", css())):
        with open(os.path.join(site, name), "w", encoding="ascii", newline="\n") as f:
            f.write(content)


if __name__ == "__main__":
    main()
