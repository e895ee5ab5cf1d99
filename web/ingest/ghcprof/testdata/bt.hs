-- A binary-trees program for viewer's GHC report tests: build trees,
-- check them, and sum the checks, with a cost centre per function.
module Main (main) where

import Data.List (foldl')

data Tree = Nil | Node Tree Tree

make :: Int -> Tree
make 0 = Node Nil Nil
make d = Node (make (d - 1)) (make (d - 1))

check :: Tree -> Int
check Nil = 0
check (Node l r) = 1 + check l + check r

sumDepth :: Int -> Int -> Int
sumDepth iters d = foldl' (\acc _ -> acc + check (make d)) 0 [1 .. iters]

main :: IO ()
main = do
  let depths = [4, 6 .. 18]
  mapM_ (\d -> print (d, sumDepth (2 ^ (22 - d)) d)) depths
