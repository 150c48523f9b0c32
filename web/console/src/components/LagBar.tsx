import { memo } from 'react';
import '@patternfly/react-styles/css/components/Progress/progress.css';
import type { GroupView } from '../api';
import { seconds } from '../format';

// LagBar shows replication lag against the RPO objective: amber from three
// quarters of the objective, red beyond it. It is PatternFly's progress markup
// without the Progress component: the overview draws one per group, and the
// component's id generation and tooltip state cost more than the bar itself.
// Without the component its styles are not bundled either, so they are
// imported here: before they were, the bar was never drawn.
export const LagBar = memo(function LagBar({ group }: { group: GroupView }) {
  const { lagSeconds, objectiveSeconds, lagLevel } = group;
  if (lagSeconds === undefined || !objectiveSeconds) {
    return <span>{lagSeconds === undefined ? 'no lag reported' : `${seconds(lagSeconds)} (no objective)`}</span>;
  }
  const pct = Math.min(100, (lagSeconds / objectiveSeconds) * 100);
  const variant = lagLevel === 'danger' ? ' pf-m-danger' : lagLevel === 'warning' ? ' pf-m-warning' : '';
  const label = `${seconds(lagSeconds)} / ${seconds(objectiveSeconds)}`;
  return (
    <div className={`pf-v6-c-progress pf-m-sm pf-m-outside pf-m-singleline sr-lag${variant}`}>
      <div className="pf-v6-c-progress__status" aria-hidden="true">
        <span className="pf-v6-c-progress__measure">{label}</span>
      </div>
      <div
        className="pf-v6-c-progress__bar"
        role="progressbar"
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={Math.round(pct)}
        aria-valuetext={`lag ${seconds(lagSeconds)} of an objective of ${seconds(objectiveSeconds)}`}
        aria-label={`RPO lag of ${group.name}`}
      >
        <div className="pf-v6-c-progress__indicator" style={{ width: `${pct}%` }} />
      </div>
    </div>
  );
});
