// A small router on the History API: the console has few screens, and the
// server answers index.html for every path, so reloads keep the screen.
import { useEffect, useState } from 'react';

export function navigate(path: string) {
  if (path !== window.location.pathname + window.location.search) {
    window.history.pushState({}, '', path);
    window.dispatchEvent(new PopStateEvent('popstate'));
  }
}

export function usePath(): string {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const on = () => setPath(window.location.pathname);
    window.addEventListener('popstate', on);
    return () => window.removeEventListener('popstate', on);
  }, []);
  return path;
}

export function useQuery(): URLSearchParams {
  usePath();
  return new URLSearchParams(window.location.search);
}
