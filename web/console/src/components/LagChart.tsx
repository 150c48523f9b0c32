import { useEffect, useState } from 'react';
import { Alert } from '@patternfly/react-core';
import { get, LagHistory } from '../api';
import { seconds } from '../format';

const W = 640;
const H = 130;
const PAD = { left: 56, right: 12, top: 10, bottom: 24 };

const hour = (t: number) => new Date(t).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });

// LagChart draws a group's replication lag over the last hours against its
// RPO objective, from Prometheus or from the samples the console took. The
// lag is held between samples (the monitor writes it only when it changes).
// It reads again when the group's current lag changes, and every minute.
export function LagChart({ ns, name, current }: { ns: string; name: string; current?: number }) {
  const [h, setH] = useState<LagHistory>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let live = true;
    const load = () =>
      get<LagHistory>(`/api/namespaces/${encodeURIComponent(ns)}/groups/${encodeURIComponent(name)}/lag?hours=6`)
        .then((v) => {
          if (!live) return;
          setH(v);
          setError(undefined);
        })
        .catch((e: Error) => live && setError(e.message));
    void load();
    const t = window.setInterval(load, 60_000);
    return () => {
      live = false;
      window.clearInterval(t);
    };
  }, [ns, name, current]);

  if (error) return <Alert isInline isPlain variant="info" title={`Lag history: ${error}`} />;
  if (!h) return null;
  const from = Date.parse(h.from);
  const to = Date.parse(h.to);
  const pts = h.samples.map((s) => ({ t: Date.parse(s.at), v: s.seconds })).filter((p) => p.t >= from && p.t <= to);
  const peak = pts.reduce((m, p) => Math.max(m, p.v), 0);
  const objective = h.objectiveSeconds || 0;
  const top = Math.max(peak * 1.1, objective * 1.25, 1);
  const x = (t: number) => PAD.left + ((t - from) / (to - from)) * (W - PAD.left - PAD.right);
  const y = (v: number) => PAD.top + (1 - v / top) * (H - PAD.top - PAD.bottom);
  // A step line: each sample holds until the next, the last until now.
  let d = '';
  pts.forEach((p, i) => {
    d += i === 0 ? `M${x(p.t)},${y(p.v)}` : `H${x(p.t)}V${y(p.v)}`;
  });
  if (pts.length) d += `H${x(to)}`;
  const area = pts.length ? `${d}V${y(0)}H${x(pts[0].t)}Z` : '';
  const breached = objective > 0 && peak > objective;
  const summary =
    `Largest lag over the last 6 hours: ${seconds(peak)}` +
    (current !== undefined ? `, now ${seconds(current)}` : '') +
    (objective ? `; objective ${seconds(objective)}${breached ? ', exceeded' : ', met'}` : '') +
    `. ${pts.length} ${pts.length === 1 ? 'sample' : 'samples'} from ${h.source === 'prometheus' ? 'Prometheus' : 'the console'}` +
    (h.since ? ` since ${hour(Date.parse(h.since))}.` : '.');
  return (
    <figure className="sr-lagchart" aria-label="Lag history">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={summary}>
        <line className="sr-lagchart__axis" x1={PAD.left} x2={W - PAD.right} y1={y(0)} y2={y(0)} />
        {objective > 0 && (
          <>
            <line className="sr-lagchart__objective" x1={PAD.left} x2={W - PAD.right} y1={y(objective)} y2={y(objective)} />
            <text className="sr-lagchart__label" x={PAD.left - 6} y={y(objective) + 4} textAnchor="end">
              {seconds(objective)}
            </text>
          </>
        )}
        <text className="sr-lagchart__label" x={PAD.left - 6} y={y(0) + 4} textAnchor="end">
          0 s
        </text>
        <text className="sr-lagchart__label" x={PAD.left - 6} y={PAD.top + 8} textAnchor="end">
          {seconds(top)}
        </text>
        <text className="sr-lagchart__label" x={PAD.left} y={H - 6}>
          {hour(from)}
        </text>
        <text className="sr-lagchart__label" x={W - PAD.right} y={H - 6} textAnchor="end">
          now
        </text>
        {area && <path className={`sr-lagchart__area${breached ? ' sr-m-breached' : ''}`} d={area} />}
        {d && <path className={`sr-lagchart__line${breached ? ' sr-m-breached' : ''}`} d={d} />}
        {pts.length <= 120 &&
          pts.map((p) => (
            <circle
              key={p.t}
              className={`sr-lagchart__point${objective > 0 && p.v > objective ? ' sr-m-breached' : ''}`}
              cx={x(p.t)}
              cy={y(p.v)}
              r={3}
            />
          ))}
      </svg>
      <figcaption>
        {summary}
        {h.note && <> {h.note}</>}
      </figcaption>
    </figure>
  );
}
