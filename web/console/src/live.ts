import { useCallback, useEffect, useRef, useState } from 'react';
import { get, HttpError, subscribe, takePrefetched } from './api';

// useLive reads path and reads it again whenever the server's change stream
// reports a change, so every screen follows the cluster without reloading.
export function useLive<T>(path: string | null) {
  const [data, setData] = useState<T | undefined>();
  const [error, setError] = useState<HttpError | undefined>();
  const [loading, setLoading] = useState(true);
  const current = useRef(path);
  current.current = path;

  const load = useCallback(async () => {
    if (!path) return;
    try {
      const d = await (takePrefetched<T>(path) ?? get<T>(path));
      if (current.current === path) {
        setData(d);
        setError(undefined);
      }
    } catch (e) {
      if (current.current === path) setError(e as HttpError);
    } finally {
      if (current.current === path) setLoading(false);
    }
  }, [path]);

  useEffect(() => {
    setLoading(true);
    void load();
    return subscribe(() => void load());
  }, [load]);

  return { data, error, loading, reload: load };
}
