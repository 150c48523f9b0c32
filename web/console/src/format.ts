export function seconds(s?: number): string {
  if (s === undefined || s === null) return '—';
  if (s < 60) return `${Math.round(s)} s`;
  const part = (n: number, unit: string, rest: number, restUnit: string) =>
    rest ? `${n} ${unit} ${rest} ${restUnit}` : `${n} ${unit}`;
  if (s < 3600) return part(Math.floor(s / 60), 'min', Math.round(s % 60), 's');
  return part(Math.floor(s / 3600), 'h', Math.floor((s % 3600) / 60), 'min');
}

export function when(t?: string): string {
  if (!t) return '—';
  const d = new Date(t);
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function bytes(n?: number): string {
  if (!n) return '0 B';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i ? 1 : 0)} ${u[i]}`;
}

export function groupPath(ns: string, name: string): string {
  return `/groups/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;
}
