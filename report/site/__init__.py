"""The nightly's trend site: a static page for GitHub Pages that works offline.

build.py writes index.html (the newest night's verdicts, the version matrix and the bisections
as HTML; the document stats.history.site_data computed, inline) and site.js beside it, which
draws the trend charts as SVG from that document. Nothing is loaded from the network; nothing
is computed here.
"""
