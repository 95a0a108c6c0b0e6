-- Tables in the PDF: column widths from their content (typst auto columns), not from the
-- Markdown's dashes; a table of WIDE columns or more gets a landscape page of its own; and words
-- longer than a column can hold (hashes) may break.
local WIDE = 12

function Table(t)
  for i, spec in ipairs(t.colspecs) do
    t.colspecs[i] = {spec[1], pandoc.ColWidthDefault}
  end
  if #t.colspecs < WIDE then
    return t
  end
  return {pandoc.RawBlock("typst", "#page(flipped: true)["), t, pandoc.RawBlock("typst", "]")}
end
function Str(s)
  if utf8.len(s.text) and utf8.len(s.text) > 24 and not s.text:find("%s") then
    local out, n = {}, 0
    for _, c in utf8.codes(s.text) do
      out[#out + 1] = utf8.char(c)
      n = n + 1
      if n % 16 == 0 then out[#out + 1] = "\u{200B}" end
    end
    return pandoc.Str(table.concat(out))
  end
end
