import { Progress, ProgressMeasureLocation, ProgressSize, ProgressVariant } from '@patternfly/react-core';
import type { GroupView } from '../api';
import { seconds } from '../format';

// LagBar shows replication lag against the RPO objective: amber from three
// quarters of the objective, red beyond it.
export function LagBar({ group }: { group: GroupView }) {
  const { lagSeconds, objectiveSeconds, lagLevel } = group;
  if (lagSeconds === undefined || !objectiveSeconds) {
    return <span>{lagSeconds === undefined ? 'no lag reported' : `${seconds(lagSeconds)} (no objective)`}</span>;
  }
  const pct = Math.min(100, (lagSeconds / objectiveSeconds) * 100);
  const variant =
    lagLevel === 'danger' ? ProgressVariant.danger : lagLevel === 'warning' ? ProgressVariant.warning : undefined;
  return (
    <Progress
      className="sr-lag"
      value={pct}
      size={ProgressSize.sm}
      measureLocation={ProgressMeasureLocation.outside}
      label={`${seconds(lagSeconds)} / ${seconds(objectiveSeconds)}`}
      valueText={`lag ${seconds(lagSeconds)} of an objective of ${seconds(objectiveSeconds)}`}
      variant={variant}
      aria-label={`RPO lag of ${group.name}`}
    />
  );
}
