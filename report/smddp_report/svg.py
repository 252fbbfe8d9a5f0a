"""Heatmaps as inline SVG (Chart.js has no heatmap): every data cell is a
<rect class="cell">, which the page counts after rendering."""
from html import escape


def heat_color(value, vmax, scheme="heat"):
    """White to red ("heat", higher is worse) or white to blue ("cool")."""
    f = 0.0 if not vmax else max(0.0, min(1.0, value / vmax))
    if scheme == "heat":
        r, g, b = 255, round(255 - 190 * f), round(255 - 210 * f)
    else:
        r, g, b = round(255 - 200 * f), round(255 - 120 * f), 255
    return f"rgb({r},{g},{b})"


def heatmap(title, x_title, y_title, col_labels, row_labels, cells, legend):
    """cells[i][j] is None (no data: drawn hatched, not counted) or a
    (fill colour, text in the cell, tooltip) triple."""
    cw, ch = max(56, 7 * max([len(c) for c in col_labels] + [4]) + 8), 24
    left = 16 + 7 * max([len(r) for r in row_labels] + [4]) + 20
    top, bottom = 40, 58
    width, height = left + cw * len(col_labels) + 20, top + ch * len(row_labels) + bottom
    width = max(width, 9 * len(title) + 20, 6 * len(legend) + 20)  # the title and legend fit a narrow grid
    out = [f'<svg class="heatmap" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<text x="{width / 2}" y="18" text-anchor="middle" class="svg-title">{escape(title)}</text>']
    for i, label in enumerate(row_labels):
        y = top + i * ch
        out.append(f'<text x="{left - 6}" y="{y + ch / 2 + 4}" text-anchor="end" class="svg-tick">{escape(label)}</text>')
        for j, cell in enumerate(cells[i]):
            x = left + j * cw
            if cell is None:
                out.append(f'<rect x="{x}" y="{y}" width="{cw}" height="{ch}" class="nodata"/>')
                continue
            fill, text, tip = cell
            out.append(f'<rect x="{x}" y="{y}" width="{cw}" height="{ch}" class="cell" fill="{fill}">'
                       f'<title>{escape(tip)}</title></rect>')
            if text:
                out.append(f'<text x="{x + cw / 2}" y="{y + ch / 2 + 4}" text-anchor="middle" '
                           f'class="svg-cell">{escape(text)}</text>')
    for j, label in enumerate(col_labels):
        x = left + j * cw + cw / 2
        out.append(f'<text x="{x}" y="{top + ch * len(row_labels) + 16}" text-anchor="middle" '
                   f'class="svg-tick">{escape(label)}</text>')
    grid_mid = left + cw * len(col_labels) / 2
    out.append(f'<text x="{grid_mid}" y="{top + ch * len(row_labels) + 36}" text-anchor="middle" '
               f'class="svg-axis">{escape(x_title)}</text>')
    out.append(f'<text x="{grid_mid}" y="{height - 6}" text-anchor="middle" class="svg-legend">{escape(legend)}</text>')
    out.append(f'<text transform="translate(12 {top + ch * len(row_labels) / 2}) rotate(-90)" text-anchor="middle" '
               f'class="svg-axis">{escape(y_title)}</text>')
    out.append("</svg>")
    return "\n".join(out)
