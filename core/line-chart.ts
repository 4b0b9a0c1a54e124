/**
 * Self-contained SVG line charts (no browser, no fonts to fetch): metric curves in result
 * directories and reports. Pure: series in, SVG text out.
 */
export interface ChartSeries {
  name: string;
  points: Array<{ x: number; y: number }>;
  /** Which palette colour to draw it in (default: its position), so one thing keeps one colour across charts. */
  colorIndex?: number;
}

export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  width?: number;
  height?: number;
}

const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

export function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (character) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[character]!);
}

/** Round tick values (1, 2, 5 × 10^k) covering [low, high]. */
export function niceTicks(low: number, high: number, count = 5): number[] {
  if (!Number.isFinite(low) || !Number.isFinite(high)) return [];
  if (low === high) {
    const pad = Math.abs(low) > 0 ? Math.abs(low) * 0.1 : 1;
    return niceTicks(low - pad, high + pad, count);
  }
  const rough = (high - low) / count;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((factor) => factor * magnitude).find((candidate) => candidate >= rough) ?? 10 * magnitude;
  const ticks: number[] = [];
  for (let value = Math.floor(low / step) * step; value <= high + step * 1e-9; value += step) {
    ticks.push(Number(value.toPrecision(12)));
  }
  if (ticks[ticks.length - 1]! < high) ticks.push(Number((ticks[ticks.length - 1]! + step).toPrecision(12)));
  return ticks;
}

export function formatTick(value: number): string {
  if (value === 0) return "0";
  const magnitude = Math.abs(value);
  if (magnitude >= 1e5 || magnitude < 1e-3) return value.toExponential(1);
  return String(Number(value.toPrecision(4)));
}

export function renderLineChart(series: ChartSeries[], options: LineChartOptions): string {
  const width = options.width ?? 640;
  const height = options.height ?? 360;
  const margin = { top: 36, right: 150, bottom: 48, left: 64 };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = height - margin.top - margin.bottom;
  const points = series.flatMap((entry) => entry.points.filter((point) => Number.isFinite(point.x) && Number.isFinite(point.y)));
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<title>${escapeXml(options.title)}</title>`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(options.title)}</text>`,
  ];
  if (points.length === 0) {
    parts.push(`<text x="${width / 2}" y="${height / 2}" text-anchor="middle" fill="#666">no data yet</text>`, "</svg>");
    return parts.join("\n");
  }
  const xTicks = niceTicks(Math.min(...points.map((point) => point.x)), Math.max(...points.map((point) => point.x)));
  const yTicks = niceTicks(Math.min(...points.map((point) => point.y)), Math.max(...points.map((point) => point.y)));
  const [xLow, xHigh] = [xTicks[0]!, xTicks[xTicks.length - 1]!];
  const [yLow, yHigh] = [yTicks[0]!, yTicks[yTicks.length - 1]!];
  const scaleX = (x: number) => margin.left + ((x - xLow) / (xHigh - xLow || 1)) * plotWidth;
  const scaleY = (y: number) => margin.top + plotHeight - ((y - yLow) / (yHigh - yLow || 1)) * plotHeight;

  parts.push(`<g class="grid" stroke="#e5e5e5">`);
  for (const tick of yTicks)
    parts.push(`<line x1="${margin.left}" x2="${margin.left + plotWidth}" y1="${scaleY(tick).toFixed(1)}" y2="${scaleY(tick).toFixed(1)}"/>`);
  parts.push("</g>", `<g class="axes" fill="#333">`);
  for (const tick of yTicks) parts.push(`<text x="${margin.left - 6}" y="${(scaleY(tick) + 4).toFixed(1)}" text-anchor="end">${formatTick(tick)}</text>`);
  for (const tick of xTicks)
    parts.push(`<text x="${scaleX(tick).toFixed(1)}" y="${margin.top + plotHeight + 16}" text-anchor="middle">${formatTick(tick)}</text>`);
  parts.push(
    `<line x1="${margin.left}" x2="${margin.left + plotWidth}" y1="${margin.top + plotHeight}" y2="${margin.top + plotHeight}" stroke="#333"/>`,
    `<line x1="${margin.left}" x2="${margin.left}" y1="${margin.top}" y2="${margin.top + plotHeight}" stroke="#333"/>`,
    `<text x="${margin.left + plotWidth / 2}" y="${height - 10}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
    `<text transform="translate(16 ${margin.top + plotHeight / 2}) rotate(-90)" text-anchor="middle">${escapeXml(options.yLabel)}</text>`,
    "</g>",
  );
  series.forEach((entry, index) => {
    const color = palette[(entry.colorIndex ?? index) % palette.length]!;
    const finite = entry.points.filter((point) => Number.isFinite(point.x) && Number.isFinite(point.y)).sort((a, b) => a.x - b.x);
    if (finite.length > 0) {
      const path = finite.map((point, position) => `${position === 0 ? "M" : "L"}${scaleX(point.x).toFixed(1)},${scaleY(point.y).toFixed(1)}`).join(" ");
      parts.push(`<path class="series" data-name="${escapeXml(entry.name)}" d="${path}" fill="none" stroke="${color}" stroke-width="2"/>`);
      if (finite.length === 1) parts.push(`<circle cx="${scaleX(finite[0]!.x).toFixed(1)}" cy="${scaleY(finite[0]!.y).toFixed(1)}" r="3" fill="${color}"/>`);
    }
    const legendY = margin.top + 14 * index;
    parts.push(
      `<rect x="${width - margin.right + 12}" y="${legendY}" width="10" height="10" fill="${color}"/>`,
      `<text x="${width - margin.right + 26}" y="${legendY + 9}">${escapeXml(entry.name.length > 20 ? `${entry.name.slice(0, 19)}…` : entry.name)}</text>`,
    );
  });
  parts.push("</svg>");
  return parts.join("\n");
}
